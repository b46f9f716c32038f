package events

import (
	"fmt"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// sleepState is what the watcher keeps of this machine's sleeps: a night
// with the lid closed is one "slept" event, not the drops, reconnection and
// connection errors that its wake brings.
type sleepState struct {
	seen   int  // the link's Sleeps at the last poll
	waking bool // a sleep was recorded and the link is not back yet
}

// noteSleep records a sleep the link found since the last poll, and says
// whether the link's changes are the wake's (fold: they are the event's),
// and whether the wake ended with the link back (back).
func (e *Recorder) noteSleep(h remote.Host, now time.Time) (fold, back bool) {
	l, ok := h.(remote.Linked)
	if !ok {
		return false, false
	}
	st := l.State()
	if n := st.Sleeps - e.slp.seen; n > 0 {
		at := st.WokeAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		text := "laptop slept " + snapshot.FormatDuration(st.SleptFor)
		if n > 1 {
			text += fmt.Sprintf(" (the last of %d sleeps)", n)
		}
		e.tl.Add(snapshot.Event{Time: at.UTC(), Kind: "slept", Text: text,
			Key: "slept|" + at.UTC().Format(time.RFC3339Nano)})
		e.slp.seen, e.slp.waking = st.Sleeps, true // the host's zone is not asked again: our sleep did not change it
	}
	if !e.slp.waking {
		return false, false
	}
	if st.Waking {
		return true, false
	}
	// the wake is over: with a link (its reconnection is folded too), or
	// with its window past, when the ordinary reconnection's news is news
	e.slp.waking = false
	back = st.Phase == remote.Connected
	return back, back
}

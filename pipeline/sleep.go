package pipeline

import (
	"fmt"
	"time"

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
func (w *Watcher) noteSleep(now time.Time) (fold, back bool) {
	l, ok := w.h.(remote.Linked)
	if !ok {
		return false, false
	}
	st := l.State()
	if n := st.Sleeps - w.slp.seen; n > 0 {
		at := st.WokeAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		text := "laptop slept " + FormatDuration(st.SleptFor)
		if n > 1 {
			text += fmt.Sprintf(" (the last of %d sleeps)", n)
		}
		w.timeline.Add(Event{Time: at.UTC(), Kind: "slept", Text: text,
			Key: "slept|" + at.UTC().Format(time.RFC3339Nano)})
		w.slp.seen, w.slp.waking = st.Sleeps, true // the host's zone is not asked again: our sleep did not change it
	}
	if !w.slp.waking {
		return false, false
	}
	if st.Waking {
		return true, false
	}
	// the wake is over: with a link (its reconnection is folded too), or
	// with its window past, when the ordinary reconnection's news is news
	w.slp.waking = false
	back = st.Phase == remote.Connected
	return back, back
}

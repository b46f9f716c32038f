package display

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// FirstScreen is how much of a log's end its first read through the agent
// sends as it is (remote.Tail.FirstBack): what a tall terminal's pane
// shows at once, about 80 rows of the worker's 100-byte progress lines or
// 50 of a server's 160-byte batch lines. The pane's older lines (the
// worker log's 64 KB, a server log's 32 KB) follow in the next poll
// (Pane): the first table moves a screen of log, not a scrollback.
const FirstScreen = 8 << 10

// FirstBehindTab is FirstScreen for a log whose pane is behind a tab on
// the first screen (the server logs': the worker log's tab opens first):
// none of its lines are on that screen, so a first read sends as they are
// what a one-shot status does (4 KB, some 25 batch lines for a key
// pressed before the next poll), the digest reaching up to them, and the
// rest follows as FirstScreen's does. 4 KB less of log text as it is:
// half a kilobyte of the first table's bytes, deflated.
const FirstBehindTab = 4 << 10

// AddTail adds a log tail's lines to its pane's ring, sanitised, each
// prefixed by tag. A line the splitter cut says so at its end. After the
// lines of a poll that jumped past a burst comes a line saying so: after
// them, not before, so that the pane, which shows the ring's end, shows it.
func AddTail(r *snapshot.Ring, up remote.TailUpdate, tag string) {
	addLines(r, up.Lines, tag)
	if up.Skipped > 0 {
		r.Add(fmt.Sprintf("%s… skipped %s: the log grew faster than a poll reads; the lines above are its newest", tag, snapshot.FormatBytes(up.Skipped)))
	}
}

func addLines(r *snapshot.Ring, ls []remote.Line, tag string) {
	r.AddEach(len(ls), func(i int) string { return lineText(ls[i], tag) })
}

func lineText(l remote.Line, tag string) string {
	s := tag + parse.SanitizeLineString(l.Text, 4096)
	if l.Truncated {
		s += fmt.Sprintf(" … line cut at %d bytes", len(l.Text))
	}
	return s
}

// Pane is one log's place in a ring shared with others (the servers'):
// where a first read's older lines go when they come a poll after it
// (remote.TailUpdate.Older), before the lines read since.
type Pane struct{ mark *snapshot.Mark }

// Add adds up's lines to r as AddTail does, leaving out the digest a
// first read held for the fold (Held), and puts its older lines where the
// first read's begin.
func (p *Pane) Add(r *snapshot.Ring, up remote.TailUpdate, tag string) {
	if up.OlderDone && p.mark != nil {
		older := up.Older[max(0, len(up.Older)-r.Cap()):] // the ring keeps no more
		lines := make([]string, len(older))
		for i, l := range older {
			lines[i] = lineText(l, tag)
		}
		r.InsertAt(p.mark, lines)
		p.mark = nil
	}
	if up.Event != remote.TailNone && p.mark != nil { // another attach: its own older lines
		r.Release(p.mark)
		p.mark = nil
	}
	if up.OlderDue {
		p.mark = r.Mark()
		up.Lines = up.Lines[min(up.Held, len(up.Lines)):]
	}
	AddTail(r, up, tag)
}

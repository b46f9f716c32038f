package display

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// AddTail adds a log tail's lines to its pane's ring, sanitised, each
// prefixed by tag. A line the splitter cut says so at its end. After the
// lines of a poll that jumped past a burst comes a line saying so: after
// them, not before, so that the pane, which shows the ring's end, shows it.
func AddTail(r *snapshot.Ring, up remote.TailUpdate, tag string) {
	r.AddEach(len(up.Lines), func(i int) string {
		l := up.Lines[i]
		s := tag + parse.SanitizeLineString(l.Text, 4096)
		if l.Truncated {
			s += fmt.Sprintf(" … line cut at %d bytes", len(l.Text))
		}
		return s
	})
	if up.Skipped > 0 {
		r.Add(fmt.Sprintf("%s… skipped %s: the log grew faster than a poll reads; the lines above are its newest", tag, snapshot.FormatBytes(up.Skipped)))
	}
}

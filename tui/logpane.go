package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
)

var tabNames = []string{"worker log", "server log", "events"}

// logPane shows one of three line sources. Lines arrive sanitised by the
// pipeline (parse.SanitizeLine) and bounded by its rings.
type logPane struct {
	tab     int
	lines   [3][]string
	follow  bool
	wrap    bool
	top     int // first line shown when not following
	query   string
	matches []int
	cur     int
	width   int
	height  int
}

func newLogPane() logPane { return logPane{follow: true} }

func (l *logPane) SetSize(w, h int) { l.width, l.height = w, h }

func (l *logPane) set(worker, server []string, evs []pipeline.Event) {
	// the pipeline hands over sanitised lines; sanitising again is a no-op on
	// clean text, and makes sure nothing else ever reaches the terminal raw
	l.lines[0], l.lines[1] = sanitizeAll(worker), sanitizeAll(server)
	ev := make([]string, len(evs))
	for i, e := range evs {
		ev[i] = e.Time.Local().Format("01-02 15:04:05") + "  " + e.Kind + "  " + parse.SanitizeString(e.Text)
	}
	l.lines[2] = ev
	if l.query != "" {
		l.search(l.query)
	}
}

func (l *logPane) shown() []string { return l.lines[l.tab] }

func (l *logPane) scroll(n int) {
	lines := l.shown()
	if l.follow {
		l.top = max(0, len(lines)-l.height)
	}
	l.follow = false
	l.top = max(0, min(l.top+n, len(lines)-1))
}

func sanitizeAll(in []string) []string {
	out := in
	for i, s := range in {
		if c := parse.SanitizeString(s); c != s {
			if &out[0] == &in[0] {
				out = append([]string(nil), in...)
			}
			out[i] = c
		}
	}
	return out
}

// find searches for q and shows the first match.
func (l *logPane) find(q string) {
	l.cur = 0
	l.search(q)
	if len(l.matches) > 0 {
		l.jump(l.matches[0])
	}
}

// search finds lines containing q; n/N step through them.
func (l *logPane) search(q string) {
	l.query, l.matches = q, nil
	if q == "" {
		return
	}
	for i, s := range l.shown() {
		if strings.Contains(strings.ToLower(s), strings.ToLower(q)) {
			l.matches = append(l.matches, i)
		}
	}
	if len(l.matches) > 0 && l.cur >= len(l.matches) {
		l.cur = len(l.matches) - 1
	}
}

func (l *logPane) next(dir int) {
	if len(l.matches) == 0 {
		return
	}
	l.cur = (l.cur + dir + len(l.matches)) % len(l.matches)
	l.jump(l.matches[l.cur])
}

func (l *logPane) jump(i int) {
	l.follow = false
	l.top = max(0, i-l.height/3)
}

// nextError jumps to the next line that looks like an error or traceback.
func (l *logPane) nextError() {
	lines := l.shown()
	start := l.top + 1
	if l.follow {
		start = 0
	}
	for k := 0; k < len(lines); k++ {
		i := (start + k) % len(lines)
		s := lines[i]
		if strings.Contains(s, "Traceback") || strings.Contains(s, "Error") || strings.Contains(s, "ERROR") ||
			strings.Contains(s, "hit an exception") || strings.Contains(s, "out of memory") || strings.Contains(s, "failed") {
			l.jump(i)
			return
		}
	}
}

// View renders the tab line and the visible lines.
func (l *logPane) View(st Styles, focused bool) string {
	var b strings.Builder
	for i, n := range tabNames {
		label := " " + string(rune('1'+i)) + " " + n + " "
		if i == l.tab {
			label = st.Selected.Render(label)
		}
		b.WriteString(label)
	}
	mode := "follow"
	if !l.follow {
		mode = "paused"
	}
	if l.wrap {
		mode += " wrap"
	}
	if l.query != "" {
		mode += " /" + l.query
		if len(l.matches) > 0 {
			mode += " (" + itoa(l.cur+1) + "/" + itoa(len(l.matches)) + ")"
		} else {
			mode += " (no match)"
		}
	}
	if focused {
		mode = "▸ " + mode
	}
	head := fit(b.String()+"  "+st.Dim.Render(mode), l.width)
	lines := l.shown()
	var rows []string
	for i := range lines {
		s := lines[i]
		if l.wrap {
			rows = append(rows, strings.Split(ansi.Hardwrap(s, max(l.width, 1), true), "\n")...)
		} else {
			rows = append(rows, s)
		}
	}
	h := max(l.height, 0)
	top := l.top
	if l.follow || top > len(rows)-1 {
		top = max(0, len(rows)-h)
	}
	out := []string{head}
	for i := top; i < top+h; i++ {
		if i < len(rows) {
			row := fit(rows[i], l.width)
			if l.query != "" && !l.wrap && isMatch(l.matches, i) {
				row = st.Accent.Render(row)
			}
			out = append(out, row)
		} else {
			out = append(out, "")
		}
	}
	return strings.Join(out, "\n")
}

func isMatch(ms []int, i int) bool {
	for _, m := range ms {
		if m == i {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

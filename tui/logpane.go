package tui

import (
	"slices"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
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

func (l *logPane) set(worker, server []string, evs []snapshot.Event) {
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

// scroll moves the view n lines; leaving follow mode, it starts from what
// was on screen, and it never scrolls past a full last page.
func (l *logPane) scroll(n int) {
	last := l.lastTop()
	if l.follow {
		l.top = last
	}
	l.follow = false
	l.top = max(0, min(l.top+n, last))
}

// toggleFollow pauses where the view is, or resumes following.
func (l *logPane) toggleFollow() {
	if l.follow {
		l.top = l.lastTop()
	}
	l.follow = !l.follow
}

// wrapped is line s as the rows it takes on screen.
func (l *logPane) wrapped(s string) []string {
	if !l.wrap {
		return []string{s}
	}
	return strings.Split(ansi.Hardwrap(s, max(l.width, 1), true), "\n")
}

// rows is how many screen rows line i takes.
func (l *logPane) rows(i int) int {
	if !l.wrap {
		return 1
	}
	return len(l.wrapped(l.shown()[i]))
}

// lastTop is the first line on screen, perhaps only its last rows, when
// the pane shows the end of the log: the bottom-most top there is. Only
// the lines that fit are wrapped.
func (l *logPane) lastTop() int {
	n := len(l.shown())
	i, rows := n, 0
	for i > 0 && rows < l.height {
		i--
		rows += l.rows(i)
	}
	return max(0, min(i, n-1))
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

// jump shows line i a third of the way down the pane.
func (l *logPane) jump(i int) {
	l.follow = false
	top, above := i, 0
	for top > 0 {
		r := l.rows(top - 1)
		if above+r > l.height/3 {
			break
		}
		above += r
		top--
	}
	l.top = min(top, l.lastTop())
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
		// parse's one rule; a traceback's later lines are part of the error above
		if parse.IsErrorLine(lines[i]) && (i == 0 || !parse.IsErrorLine(lines[i-1])) {
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
	out := []string{head}
	h := max(l.height, 0)
	for _, r := range l.window(h) {
		row := fit(r.text, l.width)
		if l.query != "" && isMatch(l.matches, r.line) {
			row = st.Accent.Render(row)
		}
		out = append(out, row)
	}
	for len(out) < h+1 {
		out = append(out, "")
	}
	return strings.Join(out, "\n")
}

// row is one screen row of the pane: a line, or a part of a wrapped one.
type row struct {
	line int
	text string
}

// window is what the pane shows, at most h rows: from line top down, or
// the end of the log when following or scrolled to the bottom. Only the
// lines shown are wrapped, so a frame costs the pane's height, not the
// log's length.
func (l *logPane) window(h int) []row {
	lines := l.shown()
	if h <= 0 || len(lines) == 0 {
		return nil
	}
	if !l.follow && l.top < l.lastTop() {
		var out []row
		for i := l.top; i < len(lines) && len(out) < h; i++ {
			for _, t := range l.wrapped(lines[i]) {
				out = append(out, row{i, t})
			}
		}
		return out[:min(len(out), h)]
	}
	var chunks [][]string // from the last line up
	i, n := len(lines), 0
	for i > 0 && n < h {
		i--
		w := l.wrapped(lines[i])
		chunks = append(chunks, w)
		n += len(w)
	}
	out := make([]row, 0, n)
	for k := len(chunks) - 1; k >= 0; k-- {
		for _, t := range chunks[k] {
			out = append(out, row{i, t})
		}
		i++
	}
	return out[len(out)-min(h, len(out)):]
}

// isMatch says whether line i matches; ms is sorted.
func isMatch(ms []int, i int) bool {
	_, ok := slices.BinarySearch(ms, i)
	return ok
}

func itoa(n int) string { return strconv.Itoa(n) }

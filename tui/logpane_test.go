package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
)

// logModel is a dashboard at w×h with n worker log lines "wl 000"…, the
// log pane focused and following.
func logModel(t *testing.T, w, h, n int, line func(i int) string) Model {
	t.Helper()
	f := newFake()
	f.snap = running()
	for i := 0; i < n; i++ {
		f.worker = append(f.worker, line(i))
	}
	m, _ := newModel(f, w, h, Config{})
	m = step(m, press("tab"))
	if m.focus != focusLog || !m.logs.follow {
		t.Fatalf("focus %d follow %v", m.focus, m.logs.follow)
	}
	return m
}

var (
	pgup   = tea.KeyPressMsg{Code: tea.KeyPgUp}
	pgdown = tea.KeyPressMsg{Code: tea.KeyPgDown}
)

func wl(i int) string { return fmt.Sprintf("wl %03d", i) }

// paneRows is the log pane's rows on screen: the lines below its tab line,
// down to the footer.
func paneRows(t *testing.T, m Model) []string {
	t.Helper()
	scr := strings.Split(screen(m), "\n")
	for i, l := range scr {
		if strings.Contains(l, "1 worker log") {
			end := min(i+1+m.logs.height, len(scr))
			return scr[i+1 : end]
		}
	}
	t.Fatalf("no log pane on screen:\n%s", screen(m))
	return nil
}

// logLines is the wl numbers on screen, in order.
func logLines(rows []string) []int {
	var out []int
	for _, r := range rows {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(r), "wl %d", &n); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// wantLines checks the pane shows lines first..last, one per row, and is full.
func wantLines(t *testing.T, m Model, first, last int) {
	t.Helper()
	if m.logs.height < 10 {
		t.Fatalf("the log pane is %d rows high on a %dx%d screen", m.logs.height, m.width, m.height)
	}
	rows := paneRows(t, m)
	got := logLines(rows)
	if len(rows) != m.logs.height || len(got) == 0 || len(got) != last-first+1 || got[0] != first || got[len(got)-1] != last {
		t.Fatalf("pane of %d rows shows lines %v, want %d..%d:\n%s", m.logs.height, got, first, last, screen(m))
	}
}

// The pane knows its height from the first WindowSizeMsg on, and keeps it
// in step with what is drawn above it: View and the scroll keys agree.
func TestLogPaneIsSizedInUpdate(t *testing.T) {
	m := logModel(t, 120, 40, 200, wl)
	h := m.logs.height
	if h < 10 {
		t.Fatalf("log pane height %d at 120x40", h)
	}
	wantLines(t, m, 200-h, 199)

	m = step(m, teaSize(200, 50))
	if m.logs.height <= h || m.logs.width != 200 {
		t.Fatalf("after a resize to 200x50: %dx%d (was height %d)", m.logs.width, m.logs.height, h)
	}
	h = m.logs.height
	// a result line in the header takes a row from the pane
	m.busy[7] = task{id: 7, what: "launch", doing: "launching"}
	m = step(m, actionMsg{id: 7, what: "launch", text: "pid 4243"})
	if m.logs.height != h-1 {
		t.Fatalf("with a result line the pane has %d rows, want %d", m.logs.height, h-1)
	}
	h = m.logs.height
	// three categories fewer give the pane three rows
	s := running()
	s.Categories = s.Categories[:7]
	m = step(m, pollMsg{gen: m.gen, snap: s, worker: m.logs.lines[0]})
	if m.logs.height != h+3 {
		t.Fatalf("with 7 categories the pane has %d rows, want %d", m.logs.height, h+3)
	}
	if n := len(strings.Split(screen(m), "\n")); n != 50 {
		t.Fatalf("%d screen lines at 200x50", n)
	}
	wantLines(t, m, 200-m.logs.height, 199)
}

// k, ↑ and pgup while following scroll from what was on screen, and the
// pane stays full (it showed one line over a blank pane: issue 15).
func TestScrollUpFromFollowShowsAFullPane(t *testing.T) {
	for _, tc := range []struct {
		key string
		by  int
	}{{"k", 1}, {"pgup", 10}} {
		t.Run(tc.key, func(t *testing.T) {
			m := logModel(t, 120, 40, 200, wl)
			h := m.logs.height
			if tc.key == "pgup" {
				m = step(m, pgup)
			} else {
				m = step(m, press(tc.key))
			}
			if m.logs.follow {
				t.Fatal("still following")
			}
			wantLines(t, m, 200-h-tc.by, 199-tc.by)
		})
	}
}

// Scrolling down stops at a full last page, not at one line over a blank pane.
func TestScrollDownStopsAtAFullPage(t *testing.T) {
	m := logModel(t, 120, 40, 200, wl)
	h := m.logs.height
	m = step(m, pgup)
	for i := 0; i < 5; i++ {
		m = step(m, pgdown)
	}
	wantLines(t, m, 200-h, 199)
	// paused there, new lines do not move the view
	m = step(m, pollMsg{gen: m.gen, snap: m.snap, worker: append(append([]string(nil), m.logs.lines[0]...), wl(200), wl(201))})
	wantLines(t, m, 200-h, 199)
	m = step(m, press("f"))
	wantLines(t, m, 202-h, 201)
	m = step(m, press("f")) // pause where it is
	wantLines(t, m, 202-h, 201)
}

// A search jump puts the match a third of the way down a full pane; one
// near the end shows the last full page with the match on it.
func TestSearchJumpShowsTheMatch(t *testing.T) {
	m := logModel(t, 120, 40, 200, func(i int) string {
		if i == 100 || i == 197 {
			return wl(i) + " needle"
		}
		return wl(i)
	})
	h := m.logs.height
	m = step(m, press("/"))
	for _, r := range "needle" {
		m = step(m, press(string(r)))
	}
	m = step(m, press("enter"))
	wantLines(t, m, 100-h/3, 100-h/3+h-1)
	if rows := paneRows(t, m); !strings.Contains(rows[h/3], "wl 100 needle") {
		t.Fatalf("the match is not a third of the way down:\n%s", strings.Join(rows, "\n"))
	}
	m = step(m, press("n"))
	wantLines(t, m, 200-h, 199)
	if !strings.Contains(strings.Join(paneRows(t, m), "\n"), "wl 197 needle") {
		t.Fatalf("the second match is not on screen:\n%s", screen(m))
	}
}

// In wrap mode the pane is full of rows too, following, scrolled and after
// a jump, and the match is on screen.
func TestWrapModeFillsThePane(t *testing.T) {
	long := func(i int) string {
		s := wl(i) + " " + strings.Repeat("x", 150) // two rows at 120 columns
		if i == 60 {
			s += " needle"
		}
		return s
	}
	m := logModel(t, 120, 40, 200, long)
	m = step(m, press("w"))
	h := m.logs.height
	if h < 10 {
		t.Fatalf("the log pane is %d rows high at 120x40", h)
	}
	full := func(what string) []string {
		t.Helper()
		rows := paneRows(t, m)
		blank := 0
		for _, r := range rows {
			if strings.TrimSpace(r) == "" {
				blank++
			}
		}
		if len(rows) != h || blank > 0 {
			t.Fatalf("%s: %d rows, %d blank, want %d full:\n%s", what, len(rows), blank, h, screen(m))
		}
		return rows
	}
	rows := full("following")
	if !strings.HasPrefix(rows[h-1], "x") || !strings.Contains(strings.Join(rows, "\n"), "wl 199") {
		t.Fatalf("following does not end on the last line's last row:\n%s", strings.Join(rows, "\n"))
	}
	m = step(m, press("k"))
	rows = full("after k")
	if strings.Contains(strings.Join(rows, "\n"), "wl 199") {
		t.Fatalf("k did not scroll:\n%s", strings.Join(rows, "\n"))
	}
	m = step(m, press("/"))
	for _, r := range "needle" {
		m = step(m, press(string(r)))
	}
	m = step(m, press("enter"))
	rows = full("after the jump")
	at := -1
	for i, r := range rows {
		if strings.Contains(r, "needle") {
			at = i
		}
	}
	if at < 0 || at < h/3-1 {
		t.Fatalf("the match is at row %d of %d:\n%s", at, h, strings.Join(rows, "\n"))
	}
}

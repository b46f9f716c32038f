package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// askedAtOnce runs cmd as the program's loop would and says whether it
// asks a poll within 0.5 s (a beat is 2 s).
func askedAtOnce(cmd tea.Cmd) bool {
	due := make(chan tea.Msg, 8)
	var run func(tea.Cmd)
	run = func(c tea.Cmd) {
		if c == nil {
			return
		}
		go func() {
			msg := c()
			if b, ok := msg.(tea.BatchMsg); ok {
				for _, c := range b {
					run(c)
				}
				return
			}
			due <- msg
		}()
	}
	run(cmd)
	timeout := time.After(500 * time.Millisecond)
	for {
		select {
		case msg := <-due:
			if _, ok := msg.(pollDue); ok {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// While the host sums a category's tokens its TOKENS cell and the
// header's token figure say "summing… N %" (never blank, 0 or a "≥"
// figure), and while the agent sums within its time budget (Resume) the
// next poll is asked at once; the fallback's slices (no Resume) wait for
// the beat. Once summed, the figure.
func TestSummingCellThenTheFigure(t *testing.T) {
	conn := snapshot.Connection{State: snapshot.LinkConnected, LastContact: tp(t0)}
	fig := int64(1200)
	snap := func(sum *snapshot.Summing) snapshot.Snapshot {
		s := snapshot.Snapshot{Connection: conn, Worker: snapshot.Worker{State: "running"}, CompletionTokens: 1200,
			Categories: []snapshot.Category{
				{Name: "B1_glaive", Class: "SHORT", Done: 7, Target: 10, State: "running", CompletionTokens: &fig},
				{Name: "B2_magicoder", Class: "SHORT", Done: 900, Target: 1000, State: "pending", TokensSumming: sum},
			}}
		if sum != nil {
			s.TokensSumming, s.TokensPartial = sum, true
		} else {
			s.Categories[1].CompletionTokens, s.CompletionTokens = &fig, 2400
		}
		return s
	}
	f := newFake()
	f.conn = conn
	f.snap = snap(&snapshot.Summing{Done: 0, Total: 1000, Resume: true})
	m, _ := newModel(f, 200, 40, Config{PollEvery: 2 * time.Second, Now: func() time.Time { return t0 }})
	row := regexp.MustCompile(`(?m)^B2_magicoder +SHORT +900/1000 +summing… 0 % `)
	if scr := screen(m); !row.MatchString(scr) || !strings.Contains(scr, "tokens summing… 0 %") || strings.Contains(scr, "≥") {
		t.Fatalf("the first table while summing:\n%s", scr)
	}
	for _, c := range []struct {
		sum  *snapshot.Summing
		cell string
		now  bool
	}{
		{&snapshot.Summing{Done: 400, Total: 1000, Resume: true}, "summing… 40 %", true},
		{&snapshot.Summing{Done: 999, Total: 1000, Resume: true}, "summing… 99 %", true},
		{&snapshot.Summing{Done: 500, Total: 1000}, "summing… 50 %", false}, // the fallback's slice: at the beat
		{nil, shortTok(fig) + " tok", false},
	} {
		nm, cmd := m.Update(pollMsg{gen: m.gen, snap: snap(c.sum)})
		m = nm.(Model)
		scr := screen(m)
		row := regexp.MustCompile(`(?m)^B2_magicoder +SHORT +900/1000 +` + regexp.QuoteMeta(c.cell) + ` `)
		if !row.MatchString(scr) {
			t.Errorf("summing %+v: the row's cell is not %q:\n%s", c.sum, c.cell, scr)
		}
		header := "tokens " + c.cell
		if c.sum == nil {
			header = shortTok(2*fig) + " tok"
		}
		if !strings.Contains(scr, header) || strings.Contains(scr, "≥") || c.sum == nil && strings.Contains(scr, "summing") {
			t.Errorf("summing %+v: the header does not say %q alone:\n%s", c.sum, header, scr)
		}
		if got := askedAtOnce(cmd); got != c.now {
			t.Errorf("summing %+v: the next poll asked at once: %v, want %v", c.sum, got, c.now)
		}
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// BenchmarkReportVsHabit: `synthwatch report HOST`, the night's report,
// timed as a whole process against the habit on the same link, as
// BenchmarkStatusCommandVsHabit does: the agent installed by a first
// status (untimed), so the host's digest runs the installed agent.
func BenchmarkReportVsHabit(b *testing.B) {
	hb := newHabitBench(b)
	hb.run(hb.ours("status", "--json"), `"done": `) // installs the agent
	hb.run(hb.ours("status", "--json"), `"reader": "go agent `)
	report := hb.ours("report")
	hb.compare(b, "host=installed", func() time.Duration { return hb.run(report, "crossed the link") })
}

// BenchmarkDashboardFirstTableVsHabit: the dashboard, `synthwatch HOST`,
// from its start in a terminal (tmux, 200x50) to the first full table on
// its screen, against the habit on the same link. host=installed: the
// agent installed by a first status (untimed), the table with every
// category's DONE and TOKENS and the server's state (host=installed,counts:
// with the DONE, the first poll's table); host=fallback:
// --no-install and no agent, the table with the DONE (the fallback counts
// first, and sums a slice of the tokens a poll). The screen is read every
// 5 ms, so a figure may be up to 5 ms (and a capture's few) late.
func BenchmarkDashboardFirstTableVsHabit(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatal("tmux not found; install it with: apt-get install -y tmux")
	}
	hb := newHabitBench(b)
	// a session that outlives the runs: each run's is not the tmux server's first
	keep := fmt.Sprintf("swkeep%d", time.Now().UnixNano())
	if out, err := tmuxCmd("new-session", "-d", "-s", keep, "sleep", "3600").CombinedOutput(); err != nil {
		b.Fatalf("tmux: %v %s", err, out)
	}
	b.Cleanup(func() { tmuxCmd("kill-session", "-t", keep).Run() })
	absent := filepath.Join(b.TempDir(), "no-synthwatch")
	fb := hb.ours("", "--no-install", "--worker-bin", absent)
	counts := fullTable(hb.root, false)
	hb.compare(b, "host=fallback", func() time.Duration { return hb.firstScreen(fb, counts) })
	hb.run(hb.ours("status", "--json"), `"done": `) // installs the agent
	hb.run(hb.ours("status", "--json"), `"reader": "go agent `)
	dash, full := hb.ours(""), fullTable(hb.root, true)
	hb.compare(b, "host=installed", func() time.Duration { return hb.firstScreen(dash, full) })
	// the first table's counts: the tokens the counts left to the host
	// come with the poll after it, asked at once
	hb.compare(b, "host=installed,counts", func() time.Duration { return hb.firstScreen(dash, counts) })
}

// fullTable is the dashboard's first full table of root: every category's
// row with its DONE (and TOKENS, with tokens), and the server's state.
func fullTable(root string, tokens bool) func(string) bool {
	dirs, _ := os.ReadDir(filepath.Join(root, "prepared"))
	var rows []*regexp.Regexp
	for _, d := range dirs {
		row := `(?m)^` + regexp.QuoteMeta(d.Name()) + ` +SHORT +\d+/\d+ `
		if tokens {
			row += `.* tok `
		}
		rows = append(rows, regexp.MustCompile(row))
	}
	return func(screen string) bool {
		for _, r := range rows {
			if !r.MatchString(screen) {
				return false
			}
		}
		return len(rows) > 0 && strings.Contains(screen, "server ready")
	}
}

// firstScreen starts c in a tmux pane and times it until done(screen).
func (hb *habitBench) firstScreen(c *exec.Cmd, done func(string) bool) time.Duration {
	session := fmt.Sprintf("swb%d", time.Now().UnixNano())
	args := []string{"new-session", "-d", "-s", session, "-x", "200", "-y", "50"}
	for _, e := range hb.extra {
		args = append(args, "-e", e)
	}
	args = append(args, c.Args...)
	start := time.Now()
	if out, err := tmuxCmd(args...).CombinedOutput(); err != nil {
		hb.tb.Fatalf("tmux: %v %s", err, out)
	}
	defer func() {
		tmuxCmd("kill-session", "-t", session).Run()
		hb.px.Reset() // what the dashboard still sends is not the habit's
	}()
	for {
		scr, _ := tmuxCmd("capture-pane", "-p", "-t", session).Output()
		if done(string(scr)) {
			d := time.Since(start)
			if os.Getenv("SW_BENCH_SHOW") != "" {
				fmt.Fprintf(os.Stderr, "%s\n%s\n", d, scr)
			}
			return d
		}
		if time.Since(start) > time.Minute {
			hb.tb.Fatalf("no full table within a minute:\n%s", scr)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

package main

import (
	"encoding/json"
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
// host=installed is a report after one that kept the records' stamps on
// the host (the first run of it keeps them); host=installed,no-keep reads
// every record, as the first report on a root does (--no-install: the
// digest keeps nothing); host=installed,after-watch is the first report
// after a dashboard's agent watched the root (afterWatch).
func BenchmarkReportVsHabit(b *testing.B) {
	hb := newHabitBench(b)
	hb.run(hb.ours("status", "--json"), `"done": `) // installs the agent
	hb.run(hb.ours("status", "--json"), `"reader": "go agent `)
	first := hb.ours("report", "--no-install")
	hb.compare(b, "host=installed,no-keep", func() time.Duration { return hb.run(first, "crossed the link") })
	hb.afterWatch(b)
	report := hb.ours("report")
	hb.run(report, "crossed the link") // keeps the stamps
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
// 5 ms through one tmux control client (paneReader), so a figure may be
// up to 5 ms (and a capture's fraction of one) late. host=first-contact:
// the table with the DONE on a host with no agent and a laptop with no
// state, the install on (the fallback reads while the agent is copied).
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
	hb.compareOn(b, "host=fallback", func() time.Duration { return hb.firstScreen(fb, counts) }, true)
	// host=first-contact: no agent on the host, no state on the laptop,
	// the install on: the fallback's table while the agent is on its way
	hb.compareOn(b, "host=first-contact", func() time.Duration {
		if hb.home == "" {
			b.Fatal("the first contact needs the server's own home (root)")
		}
		if err := os.RemoveAll(filepath.Join(hb.home, ".cache", "synthwatch")); err != nil {
			b.Fatal(err)
		}
		kept := hb.extra
		hb.extra = append(append([]string(nil), kept...), "XDG_STATE_HOME="+b.TempDir(), "XDG_CONFIG_HOME="+b.TempDir())
		defer func() { hb.extra = kept }()
		return hb.firstScreen(hb.ours(""), counts)
	}, true)
	hb.run(hb.ours("status", "--json"), `"done": `) // installs the agent
	hb.run(hb.ours("status", "--json"), `"reader": "go agent `)
	dash, full := hb.ours(""), fullTable(hb.root, true)
	hb.compareOn(b, "host=installed", func() time.Duration { return hb.firstScreen(dash, full) }, true)
	// the first table's counts: the tokens the counts left to the host
	// come with the poll after it, asked at once
	hb.compareOn(b, "host=installed,counts", func() time.Duration { return hb.firstScreen(dash, counts) }, true)
}

// BenchmarkDashboardSummingCold: the dashboard's first look at a night
// its agent has not summed (a night written while no dashboard watched:
// each raw_responses.jsonl's last record rewritten before each run, so
// the agent's kept sums are not believed and it sums every file from 0),
// at 50 ms RTT, the agent installed. Metrics, from the start in a
// terminal (tmux, 200x50): s_counts, the first table with every DONE;
// s_summing, the first "summing… N %" on the screen; s_tokens, every
// row's TOKENS figure. s_status_whole: `status --json` on the same cold
// root, whose one answer sums every file whole (the reference). Run it
// on a real night's size: SW_BENCH_ROOT_MB=1024.
func BenchmarkDashboardSummingCold(b *testing.B) {
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatal("tmux not found; install it with: apt-get install -y tmux")
	}
	hb := newHabitBench(b)
	hb.px.SetDelay(25 * time.Millisecond)
	hb.run(hb.ours("status", "--json"), `"done": `) // installs the agent
	dash, counts, full := hb.ours(""), fullTable(hb.root, false), fullTable(hb.root, true)
	summing := func(scr string) bool { return strings.Contains(scr, "summing… ") }
	var c, s, t, w []float64
	flip := 0
	for b.Loop() {
		b.StopTimer()
		flip++
		rewriteLastRecords(b, hb.root, flip)
		b.StartTimer()
		d := hb.screenTimes(dash, counts, summing, full)
		c, s, t = append(c, d[0].Seconds()), append(s, d[1].Seconds()), append(t, d[2].Seconds())
		b.StopTimer()
		flip++
		rewriteLastRecords(b, hb.root, flip)
		w = append(w, hb.run(hb.ours("status", "--json"), `"completion_tokens": `).Seconds())
		b.StartTimer()
	}
	b.ReportMetric(median(c), "s_counts")
	b.ReportMetric(median(s), "s_summing")
	b.ReportMetric(median(t), "s_tokens")
	b.ReportMetric(median(w), "s_status_whole")
}

// rewriteLastRecords rewrites, in place, each category's last record's
// completion_tokens (250 or 251 by flip): the agent's kept sums end in
// other bytes than it hashed, so it sums the file again from 0.
func rewriteLastRecords(b *testing.B, root string, flip int) {
	files, _ := filepath.Glob(filepath.Join(root, "prepared", "*", "raw_responses.jsonl"))
	for _, p := range files {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			b.Fatal(err)
		}
		fi, _ := f.Stat()
		tail := make([]byte, min(fi.Size(), 4096))
		at := fi.Size() - int64(len(tail))
		f.ReadAt(tail, at)
		i := strings.LastIndex(string(tail), `"completion_tokens":25`)
		if i < 0 {
			b.Fatalf("%s: no completion_tokens in its last 4 KB", p)
		}
		f.WriteAt([]byte{"01"[flip%2]}, at+int64(i+len(`"completion_tokens":25`)))
		f.Close()
	}
}

// screenTimes starts c in a tmux pane and times it until each of conds
// holds of the screen, in turn.
func (hb *habitBench) screenTimes(c *exec.Cmd, conds ...func(string) bool) []time.Duration {
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
		hb.px.Reset()
	}()
	var ds []time.Duration
	for len(ds) < len(conds) {
		scr := hb.screen(session)
		for len(ds) < len(conds) && conds[len(ds)](scr) {
			ds = append(ds, time.Since(start))
		}
		if time.Since(start) > 5*time.Minute {
			hb.tb.Fatalf("the screen never held condition %d:\n%s", len(ds)+1, scr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return ds
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

// habitOnScreen is the habit in a terminal: from its start in a tmux pane
// to its last line (wc's total) on the screen, timed as the dashboard's
// first table is (the pane kept after it ends, by a sleep).
func (hb *habitBench) habitOnScreen() time.Duration {
	c := exec.Command("sh", append([]string{"-c", `"$@"; exec sleep 3600`, "sh"}, hb.habit.Args...)...)
	return hb.firstScreen(c, func(scr string) bool { return strings.Contains(scr, " total") })
}

// screen is what session's pane shows, read through the bench's one
// tmux control client (paneReader), not a tmux process a read.
func (hb *habitBench) screen(session string) string {
	if hb.panes == nil {
		hb.panes = newPaneReader(hb.tb)
	}
	scr, err := hb.panes.capture(session)
	if err != nil {
		hb.tb.Fatalf("reading the screen: %v", err)
	}
	return scr
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
		scr := hb.screen(session)
		if done(scr) {
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

// afterWatch: the first report on the root after an agent watched it
// as a dashboard's does (status --follow: one agent, polled) for 75 s,
// past the minute after which it keeps the report's stamps of the records
// it sums (remote/stampkeep.go); the report then replays them. Timed once
// at 50 ms beside three runs of the habit (s_report, s_habit,
// x_habit); kept_MB is the records' bytes it did not read again, and a
// report that read them all fails it.
func (hb *habitBench) afterWatch(b *testing.B) {
	b.Run("host=installed,after-watch/rtt=50ms", func(b *testing.B) {
		hb.px.SetDelay(25 * time.Millisecond)
		w := hb.ours("status", "--follow")
		watch := exec.Command(w.Path, w.Args[1:]...)
		watch.Env = hb.env
		if err := watch.Start(); err != nil {
			b.Fatal(err)
		}
		time.Sleep(75 * time.Second)
		watch.Process.Signal(os.Interrupt)
		watch.Wait()
		var habit []float64
		for range 3 {
			habit = append(habit, hb.run(hb.habit, "total").Seconds())
		}
		r := hb.ours("report", "--json")
		cmd := exec.Command(r.Path, r.Args[1:]...)
		cmd.Env = hb.env
		start := time.Now()
		out, err := cmd.Output()
		d := time.Since(start)
		var rep struct {
			Read struct {
				Bytes int64 `json:"bytes"`
				Kept  int64 `json:"kept_bytes"`
			} `json:"read"`
		}
		if err != nil || json.Unmarshal(out, &rep) != nil {
			b.Fatalf("report --json: %v\n%.300s", err, out)
		}
		if rep.Read.Kept == 0 {
			b.Fatalf("the report after the watch read every record again (%d bytes): the agent kept no stamps", rep.Read.Bytes)
		}
		for b.Loop() { // one timed report: the next would replay its own
		}
		b.ReportMetric(d.Seconds(), "s_report")
		b.ReportMetric(median(habit), "s_habit")
		b.ReportMetric(d.Seconds()/median(habit), "x_habit")
		b.ReportMetric(float64(rep.Read.Kept)/(1<<20), "kept_MB")
	})
}

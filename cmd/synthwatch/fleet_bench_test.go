package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
)

// growth is one host's raw_responses.jsonl as the night writes it: the
// line count after each write, and when.
type growth struct {
	mu    sync.Mutex
	count []int
	at    []time.Time
}

// staleness is how long the figure n had been out of date at t: since the
// write that first made the count more than n (0 if none had).
func (g *growth) staleness(n int, t time.Time) (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	i, found := slices.BinarySearch(g.count, n)
	if !found {
		return 0, false // not a count the file ever had: a torn read of the screen
	}
	if i+1 >= len(g.count) || g.at[i+1].After(t) {
		return 0, true
	}
	return t.Sub(g.at[i+1]), true
}

// growRoot is a root whose category grows through the night: a line of
// progress in the worker log and five records every half second.
func growRoot(b *testing.B, stop <-chan struct{}) (string, *growth) {
	root := b.TempDir()
	dir := filepath.Join(root, "prepared", "B1_night")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 100000)), 0o644)
	raw, _ := os.Create(filepath.Join(dir, "raw_responses.jsonl"))
	logf, _ := os.Create(filepath.Join(root, "logs", "inference_all.log"))
	g := &growth{count: []int{0}, at: []time.Time{time.Now()}}
	go func() {
		defer raw.Close()
		defer logf.Close()
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		n, id := 0, 0
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			var sb strings.Builder
			for range 5 {
				fmt.Fprintf(&sb, `{"id":%d,"response":"ok","completion_tokens":200}`+"\n", id)
				id++
			}
			raw.WriteString(sb.String())
			n += 5
			fmt.Fprintf(logf, "%d/100000 (0 err) 10.0 req/s avg_comp=200tok ETA=2.7h\n", n)
			g.mu.Lock()
			g.count, g.at = append(g.count, n), append(g.at, time.Now())
			g.mu.Unlock()
		}
	}()
	return root, g
}

// BenchmarkFleet16: the fleet dashboard (the real binary in tmux) over 16
// real sshd at the default 2 s poll, each root growing all the while (an
// accelerated night: 10 records/s per host), for SW_FLEET_SECONDS (120).
// It reports the whole process's CPU in % of a core, its RSS (the largest,
// and the last third's mean over the first third's: flat is 1), and each
// row's freshness: how long the count a row shows had been out of date on
// the host when the screen was read, the worst and the median over every
// row of every sample (goal: within one poll plus one RTT).
// SW_FLEET_PROFILE=FILE writes the dashboard's CPU profile. Each host has
// the worker deployed, so its agent is the binary.
func BenchmarkFleet16(b *testing.B) { fleet16(b, true) }

// BenchmarkFleet16Shell is BenchmarkFleet16 on hosts where nothing is
// deployed: the agent is the shell, which forks for its ops, and the 16
// hosts share this machine's cores with the dashboard.
func BenchmarkFleet16Shell(b *testing.B) { fleet16(b, false) }

func fleet16(b *testing.B, deployed bool) {
	secs := 120
	if v, err := strconv.Atoi(os.Getenv("SW_FLEET_SECONDS")); err == nil {
		secs = v
	}
	bin := testbin.Path(b)
	testgate.E2E(b)
	if _, err := exec.LookPath("tmux"); err != nil {
		b.Fatal("tmux not found; install it with: apt-get install -y tmux")
	}
	b.Setenv("SSH_AUTH_SOCK", "")
	stop := make(chan struct{})
	defer close(stop)
	const n = 16
	grows := make([]*growth, n)
	lab := newFleetLab(b, n, func(i int) string {
		root, g := growRoot(b, stop)
		grows[i] = g
		return root
	}, nil)
	if deployed {
		lab.deploy(b, bin)
	}
	for b.Loop() {
		session := fmt.Sprintf("fleet%d", time.Now().UnixNano())
		args := []string{"new-session", "-d", "-s", session, "-x", "160", "-y", "50", "-e", "XDG_STATE_HOME=" + b.TempDir(), "-e", "SSH_AUTH_SOCK=",
			"-e", "XDG_CONFIG_HOME=" + lab.confDir, "-e", "SYNTHWATCH_CPUPROFILE=" + os.Getenv("SW_FLEET_PROFILE"), bin, "-F", lab.sshCfg, "--fleet", "lab"}
		if out, err := tmuxCmd(args...).CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		screen := func() string {
			out, _ := tmuxCmd("capture-pane", "-p", "-t", session).Output()
			return string(out)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(screen(), fmt.Sprintf("%d/%d live", n, n)) {
			if time.Now().After(deadline) {
				b.Fatalf("not every host live within 60 s:\n%s", screen())
			}
			time.Sleep(200 * time.Millisecond)
		}
		pid, _ := tmuxCmd("display", "-p", "-t", session, "#{pane_pid}").Output()
		p := strings.TrimSpace(string(pid))
		c0, t0, f0 := cpuSeconds(p), time.Now(), forks()
		var rss []float64
		var fresh []time.Duration
		for k := 0; time.Since(t0) < time.Duration(secs)*time.Second; k++ {
			time.Sleep(time.Second + time.Duration(k*7919%1000)*time.Millisecond/2) // 1 to 1.5 s: no beat with the polls', whose phase would bias the figures
			at, scr := time.Now(), screen()
			for i := range n {
				if d, ok := grows[i].staleness(rowDone(scr, alias(i)), at); ok {
					fresh = append(fresh, d)
				}
			}
			rss = append(rss, testbin.RSSMB(p))
		}
		c1, el, f1 := cpuSeconds(p), time.Since(t0), forks()
		tmuxCmd("send-keys", "-t", session, "q").Run() // a clean exit writes the profile (SW_FLEET_PROFILE)
		time.Sleep(3 * time.Second)
		tmuxCmd("kill-session", "-t", session).Run()
		if c0 < 0 || c1 < 0 || len(rss) < 3 || len(fresh) == 0 {
			b.Fatalf("could not measure: cpu %v %v, %d RSS samples, %d row samples", c0, c1, len(rss), len(fresh))
		}
		third := len(rss) / 3
		slices.Sort(fresh)
		b.ReportMetric(100*(c1-c0)/el.Seconds(), "%core")
		b.ReportMetric(slices.Max(rss), "RSS_MB")
		b.ReportMetric(mean(rss[len(rss)-third:])/mean(rss[:third]), "RSS_last/first")
		b.ReportMetric(fresh[len(fresh)-1].Seconds(), "row_stale_max_s")
		b.ReportMetric(fresh[len(fresh)/2].Seconds(), "row_stale_p50_s")
		b.ReportMetric(float64(len(fresh))/float64(len(rss)*n), "rows_read")
		// what the hosts' side costs: processes started on this machine
		// (the 16 hosts, and the bench's own capture-pane) per host poll
		b.ReportMetric(float64(f1-f0)/(float64(n)*el.Seconds()/2), "forks/poll")
	}
}

// forks is how many processes this machine has started since boot.
func forks() int64 {
	b, _ := os.ReadFile("/proc/stat")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "processes "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	return 0
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

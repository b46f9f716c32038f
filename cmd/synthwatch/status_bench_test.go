package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// statusRoot is a running job's root as `status` meets it cold: five
// categories (2,900 records), a 1 MB worker log, a 1 MB server log, and
// pipeline.toml naming a live server (sim, on the host's loopback).
//
// With SW_BENCH_ROOT_MB set it is a real night's size instead: ten
// categories of records summing to that many MB (1024: about 1 GB) and a
// 20 MB server log.
func statusRoot(b testing.TB) string {
	if mb, _ := strconv.Atoi(os.Getenv("SW_BENCH_ROOT_MB")); mb > 0 {
		return bigStatusRoot(b, mb)
	}
	srv := sim.New(sim.Options{})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	root := b.TempDir()
	var man strings.Builder
	fmt.Fprintf(&man, "server = %q\n", srv.URL())
	for i, n := range []string{"B1_glaive", "B2_opencodeinstruct", "B3_magicoder", "B4_longwriter", "B5_metamath"} {
		d := filepath.Join(root, "prepared", n)
		os.MkdirAll(d, 0o755)
		var p, r strings.Builder
		for k := 0; k < 1000; k++ {
			fmt.Fprintf(&p, `{"id":"%s-%d","messages":[{"role":"user","content":"q"}]}`+"\n", n, k)
			if k < 1000-200*i {
				fmt.Fprintf(&r, `{"id":"%s-%d","completion_tokens":250,"content":"%s"}`+"\n", n, k, strings.Repeat("a", 800))
			}
		}
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(p.String()), 0o644)
		os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte(r.String()), 0o644)
		fmt.Fprintf(&man, "[[categories]]\nname = %q\nclass = \"SHORT\"\n", n)
	}
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(man.String()), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), workerLogOf("B2_opencodeinstruct", 1<<20), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), serverLogOf(1<<20), 0o644)
	return root
}

// bigStatusRoot is ten categories of mb MB of records in all, their
// prompts, a worker log and a 20 MB server log.
func bigStatusRoot(b testing.TB, mb int) string {
	srv := sim.New(sim.Options{})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	root := b.TempDir()
	var man strings.Builder
	fmt.Fprintf(&man, "server = %q\n", srv.URL())
	rec := func(n string, k int) string {
		return fmt.Sprintf(`{"id":"%s-%d","run":"r1","completion_tokens":250,"content":"%s"}`+"\n", n, k, strings.Repeat("a", 900))
	}
	per := mb << 20 / 10 / len(rec("B00_cat", 0))
	for i := range 10 {
		n := fmt.Sprintf("B%02d_cat", i)
		d := filepath.Join(root, "prepared", n)
		os.MkdirAll(d, 0o755)
		var p strings.Builder
		for k := 0; k < per+1000; k++ {
			fmt.Fprintf(&p, `{"id":"%s-%d","messages":[{"role":"user","content":"q"}]}`+"\n", n, k)
		}
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(p.String()), 0o644)
		f, err := os.Create(filepath.Join(d, "raw_responses.jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		for k := 0; k < per; k++ {
			w.WriteString(rec(n, k))
		}
		w.Flush()
		f.Close()
		fmt.Fprintf(&man, "[[categories]]\nname = %q\nclass = \"SHORT\"\n", n)
	}
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(man.String()), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), workerLogOf("B02_cat", 1<<20), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), serverLogOf(20<<20), 0o644)
	return root
}

// workerLogOf is a worker log of about size bytes as a night writes it:
// the category's header lines, then progress lines whose figures move
// (a log of one line repeated would deflate to nothing and flatter the
// bytes on the wire).
func workerLogOf(cat string, size int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var w strings.Builder
	fmt.Fprintf(&w, "============================================================\nProcessing: %s (SHORT)\n============================================================\n%s: 600000 prompts\nRunning 600000 requests (concurrency=150, max_tokens=10240)...\n", cat, cat)
	for k := 50; w.Len() < size; k += 50 {
		left := 600000 - k
		rate := 8 + 4*rng.Float64()
		fmt.Fprintf(&w, "%d/600000 (%d err) %.1f req/s avg_comp=%dtok ETA=%.1fh\n", k, k/9000, rate, 200+rng.IntN(120), float64(left)/rate/3600)
	}
	return []byte(w.String())
}

// serverLogOf is an SGLang log of about size bytes: decode and prefill
// batch lines whose figures and times move, and uvicorn's access lines.
func serverLogOf(size int) []byte {
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	var w strings.Builder
	for i := 0; w.Len() < size; i++ {
		ts := t0.Add(time.Duration(i) * 400 * time.Millisecond).Format("2006-01-02 15:04:05")
		run := 120 + rng.IntN(40)
		switch i % 10 {
		case 3:
			fmt.Fprintf(&w, "[%s TP0] Prefill batch, #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, #running-req: %d, #queue-req: %d\n", ts, 1+rng.IntN(6), 400+rng.IntN(3000), rng.IntN(2000), 0.3+0.4*rng.Float64(), run, rng.IntN(20))
		case 7:
			fmt.Fprintf(&w, "[%s] INFO:     127.0.0.1:%d - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n", ts, 30000+rng.IntN(30000))
		default:
			fmt.Fprintf(&w, "[%s TP0] Decode batch, #running-req: %d, #token: %d, token usage: %.2f, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: %d\n", ts, run, 200000+rng.IntN(200000), 0.3+0.4*rng.Float64(), 1800+900*rng.Float64(), rng.IntN(20))
		}
	}
	return []byte(w.String())
}

// BenchmarkStatusCommandVsHabit: the command a user types,
// `synthwatch status --json HOST`, timed as a whole process from exec to
// exit, alternating with the habit it replaces, `ssh HOST 'tail -n 20 LOG;
// wc -l …/raw_responses.jsonl'`, on the same link: a real sshd behind a
// proxy that adds the RTT, cold on both sides (no ControlMaster, a new
// connection each run). Reported: medians of each and their ratio, and
// the bytes that crossed the link per run of each.
//
// host=fallback: no agent installed and --no-install (the shell agent
// reads); host=installed: the agent installed in the host's cache (by a
// first status, not timed), which keeps its token sums there between
// runs. Each run of either is a new connection and a new agent process.
// SW_BENCH_SERVER=dropbear: the host's SSH server is Dropbear (it opens a
// session's window at once, and takes no string over 9,000 bytes).
func BenchmarkStatusCommandVsHabit(b *testing.B) {
	hb := newHabitBench(b)
	absent := filepath.Join(b.TempDir(), "no-synthwatch")
	want := `"done": 1000`
	if os.Getenv("SW_BENCH_ROOT_MB") != "" {
		want = `"done": `
	}
	for _, host := range []struct {
		name string
		cmd  *exec.Cmd
	}{{"fallback", hb.ours("status", "--json", "--no-install", "--worker-bin", absent)}, {"installed", hb.ours("status", "--json", "--worker-bin", absent)}} {
		want := want
		if host.name == "installed" {
			hb.run(host.cmd, want) // the first contact: it installs the agent (BenchmarkFirstInstall times that)
			want = `"reader": "go agent `
			hb.run(host.cmd, want) // and the agent sums the root once
		}
		hb.compare(b, "host="+host.name, func() time.Duration { return hb.run(host.cmd, want) })
	}
}

// habitBench is a host behind a delay proxy with statusRoot on it, our
// command and the habit it replaces, `ssh HOST 'tail -n 20 LOG; wc -l
// …/raw_responses.jsonl'`: each run a new process and a new connection.
type habitBench struct {
	tb    testing.TB
	bin   string
	root  string
	px    *faultproxy.Proxy
	extra []string // the environment our command runs with, past this process's
	env   []string
	ssh   []string // our command's SSH flags and --root
	dest  string
	habit *exec.Cmd
	panes *paneReader // reads the screens of the benchmarks in a terminal
	home  string      // the server's home, where the agent is installed
}

func newHabitBench(b *testing.B) *habitBench {
	start := sshdtest.Start
	if os.Getenv("SW_BENCH_SERVER") == "dropbear" {
		start = sshdtest.StartDropbear
	}
	s := start(b)
	root := statusRoot(b)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(px.Close)
	port := px.Addr()[strings.LastIndexByte(px.Addr(), ':')+1:]
	kh := filepath.Join(b.TempDir(), "kh")
	khb, _ := os.ReadFile(s.KnownHosts)
	os.WriteFile(kh, []byte(strings.Replace(string(khb), fmt.Sprint(s.Port), port, 1)), 0o644)
	cfg := filepath.Join(b.TempDir(), "ssh_config")
	os.WriteFile(cfg, nil, 0o600)
	hb := &habitBench{tb: b, bin: testbin.Path(b), root: root, px: px, home: s.Home(),
		extra: []string{"SSH_AUTH_SOCK=", "XDG_CONFIG_HOME=" + b.TempDir(), "XDG_STATE_HOME=" + b.TempDir()},
		ssh:   []string{"-F", cfg, "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "--root", root},
		dest:  s.User + "@127.0.0.1:" + port,
		habit: exec.Command("ssh", "-F", cfg, "-T", "-i", s.KeyPath, "-p", port, "-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
			"-o", "ControlMaster=no", "-o", "ControlPath=none", s.User+"@127.0.0.1",
			"tail -n 20 "+root+"/logs/inference_all.log; wc -l "+root+"/prepared/*/raw_responses.jsonl"),
	}
	hb.env = append(os.Environ(), hb.extra...)
	return hb
}

// ours is `synthwatch [sub] FLAGS… SSH-FLAGS… HOST` (sub "" the dashboard).
func (hb *habitBench) ours(sub string, flags ...string) *exec.Cmd {
	args := append(append(append([]string{}, flags...), hb.ssh...), hb.dest)
	if sub != "" {
		args = append([]string{sub}, args...)
	}
	return exec.Command(hb.bin, args...)
}

// run runs c to its end and times it; its output must hold want.
func (hb *habitBench) run(c *exec.Cmd, want string) time.Duration {
	cmd := exec.Command(c.Path, c.Args[1:]...)
	cmd.Env = hb.env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), want) {
		hb.tb.Fatalf("%s: %v\n%s", c.Args[0], err, out)
	}
	return d
}

// compare times ours against the habit, alternating, at 50, 150 and 300
// ms RTT (SW_BENCH_RTTS, say "50" or "0,50": those): the medians, their
// ratio, and each one's bytes on the link a run.
func (hb *habitBench) compare(b *testing.B, name string, ours func() time.Duration) {
	hb.compareOn(b, name, ours, false)
}

// compareOn is compare; onScreen: ours is timed to its screen in a
// terminal (tmux), so the habit is timed so too, beside its bare run:
// habit_tty_s and x_habit_tty, the same terminal's cost on both sides.
func (hb *habitBench) compareOn(b *testing.B, name string, ours func() time.Duration, onScreen bool) {
	for _, rtt := range benchRTTs(b) {
		b.Run(fmt.Sprintf("%s/rtt=%dms", name, rtt.Milliseconds()), func(b *testing.B) {
			hb.px.SetDelay(rtt / 2)
			var o, h, ht []float64
			var ob, hbytes int64
			for b.Loop() {
				// each run's bytes are its own: the last chunks of the one
				// before it (a fallback's stream cut once the agent
				// answered, held by the delay past its end) are counted first
				hb.px.Idle(5 * time.Second)
				b0 := hb.px.Bytes.Load()
				o = append(o, ours().Seconds())
				hb.px.Idle(5 * time.Second)
				b1 := hb.px.Bytes.Load()
				h = append(h, hb.run(hb.habit, "total").Seconds())
				hb.px.Idle(5 * time.Second)
				ob, hbytes = ob+b1-b0, hbytes+hb.px.Bytes.Load()-b1
				if onScreen {
					ht = append(ht, hb.habitOnScreen().Seconds())
				}
			}
			mo, mh := median(o), median(h)
			if onScreen {
				b.ReportMetric(median(ht), "habit_tty_s")
				b.ReportMetric(mo/median(ht), "x_habit_tty")
			}
			b.ReportMetric(float64(ob)/float64(len(o))/1e3, "KB")
			b.ReportMetric(float64(hbytes)/float64(len(h))/1e3, "habit_KB")
			b.ReportMetric(mo, "s")
			b.ReportMetric(mh, "habit_s")
			b.ReportMetric(mo/mh, "x_habit")
			if rtt > 0 {
				b.ReportMetric(mo/rtt.Seconds(), "RTTs")
				b.ReportMetric(mh/rtt.Seconds(), "habit_RTTs")
			}
		})
	}
}

// benchRTTs are the round trips compare runs at: 50, 150 and 300 ms,
// or SW_BENCH_RTTS's, in milliseconds.
func benchRTTs(b *testing.B) []time.Duration {
	v := os.Getenv("SW_BENCH_RTTS")
	if v == "" {
		return []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond}
	}
	var out []time.Duration
	for _, f := range strings.Split(v, ",") {
		ms, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || ms < 0 {
			b.Fatalf("SW_BENCH_RTTS=%q: want milliseconds, as 50,150", v)
		}
		out = append(out, time.Duration(ms)*time.Millisecond)
	}
	return out
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

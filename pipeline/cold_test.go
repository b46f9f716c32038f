package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// coldRoot lays out a root as a running job has it: a manifest, five
// categories (one with big files, counted on the host), both logs with a
// megabyte of history, runs.jsonl, errors, worker.json naming a live
// worker process, and a server answering /metrics.
func coldRoot(tb testing.TB) (root, serverURL string, pid int) {
	tb.Helper()
	root = tb.TempDir()
	srv := sim.New(sim.Options{})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	var man strings.Builder
	fmt.Fprintf(&man, "server = %q\n", srv.URL())
	sizes := map[string][2]int{"B1_glaive": {400, 400}, "B2_opencodeinstruct": {6000, 2500}, "B3_magicoder": {500, 0}, "B4_longwriter": {48, 0}, "B5_metamath": {400, 0}}
	for _, n := range []string{"B1_glaive", "B2_opencodeinstruct", "B3_magicoder", "B4_longwriter", "B5_metamath"} {
		d := filepath.Join(root, "prepared", n)
		must(tb, os.MkdirAll(d, 0o755))
		must(tb, os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(prompts(n, sizes[n][0])), 0o644))
		if sizes[n][1] > 0 {
			must(tb, os.WriteFile(filepath.Join(d, parse.RawFile), []byte(records(n, 0, sizes[n][1])), 0o644))
			must(tb, os.WriteFile(filepath.Join(d, "runs.jsonl"), []byte(`{"run":"r","started_at":"2026-12-01T01:00:00Z","pid":1}`+"\n"), 0o644))
		}
		fmt.Fprintf(&man, "[[categories]]\nname = %q\nclass = \"SHORT\"\n", n)
	}
	must(tb, os.WriteFile(filepath.Join(root, "prepared", "B2_opencodeinstruct", "errors.jsonl"), []byte(`{"id":"B2_opencodeinstruct-9","error":"timeout"}`+"\n"), 0o644))
	must(tb, os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(man.String()), 0o644))
	must(tb, os.MkdirAll(filepath.Join(root, "logs"), 0o755))
	var wl strings.Builder
	wl.WriteString("Processing: B2_opencodeinstruct (SHORT)\n")
	for wl.Len() < 1<<20 {
		wl.WriteString("2450/6000 (1 err) 9.8 req/s avg_comp=248tok ETA=6m\n")
	}
	must(tb, os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(wl.String()), 0o644))
	var sl strings.Builder
	for sl.Len() < 1<<20 {
		sl.WriteString("[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 2560.00, #queue-req: 0\n")
	}
	must(tb, os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte(sl.String()), 0o644))
	pid = fakeWorker(tb, root)
	st := parse.WorkerState{Schema: 1, PID: pid, State: parse.WorkerRunning, Category: "B2_opencodeinstruct", UpdatedAt: time.Now()}
	data, err := jsonMarshal(st)
	must(tb, err)
	must(tb, os.MkdirAll(filepath.Join(root, "run"), 0o755))
	must(tb, os.WriteFile(filepath.Join(root, "run", "worker.json"), data, 0o644))
	return root, srv.URL(), pid
}

// proxied is a loopback proxy in front of s with a known_hosts for it.
type proxied struct {
	px *faultproxy.Proxy
	s  *sshdtest.Server
	kh string
}

func newProxied(tb testing.TB, s *sshdtest.Server) *proxied {
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(px.Close)
	kh := filepath.Join(tb.TempDir(), "kh")
	khb, err := os.ReadFile(s.KnownHosts)
	must(tb, err)
	port := func(a string) string { return a[strings.LastIndexByte(a, ':')+1:] }
	must(tb, os.WriteFile(kh, []byte(strings.Replace(string(khb), port(s.Addr()), port(px.Addr()), 1)), 0o644))
	return &proxied{px: px, s: s, kh: kh}
}

// dial connects through the proxy; opts are more ssh -o options.
func (p *proxied) dial(tb testing.TB, opts ...string) *remote.SSH {
	tb.Helper()
	h, err := remote.Dial(context.Background(), remote.Options{Target: p.s.User + "@" + p.px.Addr(), Identities: []string{p.s.KeyPath}, Home: tb.TempDir(),
		Opts: append([]string{"UserKnownHostsFile=" + p.kh, "StrictHostKeyChecking=yes", "BatchMode=yes"}, opts...)})
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// habit runs the users' own poll, `ssh host 'tail …; wc -l …'`, with
// OpenSSH's client through the proxy.
func (p *proxied) habit(tb testing.TB, root string) {
	tb.Helper()
	cmd := "tail -n 20 " + remote.Quote(parse.Layout{Root: root}.WorkerLog()) + "; wc -l " + remote.Quote(root) + "/prepared/*/" + parse.RawFile
	port := p.px.Addr()[strings.LastIndexByte(p.px.Addr(), ':')+1:]
	out, err := exec.Command("ssh", "-T", "-i", p.s.KeyPath, "-p", port, "-o", "UserKnownHostsFile="+p.kh, "-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes", p.s.User+"@127.0.0.1", cmd).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "total") {
		tb.Fatalf("habit: %v %s", err, out)
	}
}

// BenchmarkColdStatus: what `synthwatch status` costs from nothing: the
// SSH handshake and the first Snapshot of a running job's root (coldRoot),
// through a proxy that adds the RTT, next to the users' habit on the same
// link (OpenSSH's ssh, `tail; wc -l`). RTTs is the wall time over the RTT.
func BenchmarkColdStatus(b *testing.B) {
	s := sshdtest.Start(b)
	root, url, pid := coldRoot(b)
	p := newProxied(b, s)
	b.Setenv("SSH_AUTH_SOCK", "")
	for _, rtt := range []time.Duration{0, 50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond} {
		b.Run(fmt.Sprintf("rtt=%dms", rtt.Milliseconds()), func(b *testing.B) {
			p.px.SetDelay(rtt / 2)
			var ours, theirs time.Duration
			n := 0
			for b.Loop() {
				start := time.Now()
				h := p.dial(b)
				snap := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: url}, nil).Poll(context.Background())
				ours += time.Since(start)
				h.Close()
				if snap.Worker.PID != pid || len(snap.Categories) != 5 || snap.Categories[1].Done != 2500 || (snap.Server.State != snapshot.ServerReady && snap.Server.State != snapshot.ServerBusy) {
					b.Fatalf("cold snapshot: worker %+v, %d categories %+v, server %s", snap.Worker, len(snap.Categories), snap.Categories, snap.Server.State)
				}
				start = time.Now()
				p.habit(b, root)
				theirs += time.Since(start)
				n++
			}
			f := float64(n)
			b.ReportMetric(ours.Seconds()/f, "s")
			b.ReportMetric(theirs.Seconds()/f, "habit_s")
			b.ReportMetric(ours.Seconds()/theirs.Seconds(), "x_habit")
			if rtt > 0 {
				b.ReportMetric(ours.Seconds()/f/rtt.Seconds(), "RTTs")
				b.ReportMetric(theirs.Seconds()/f/rtt.Seconds(), "habit_RTTs")
			}
		})
	}
}

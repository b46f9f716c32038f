package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
func statusRoot(b testing.TB) string {
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
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte("Processing: B2_opencodeinstruct (SHORT)\n"+strings.Repeat("2450/6000 (1 err) 9.8 req/s avg_comp=248tok ETA=6m\n", 20000)), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte(strings.Repeat("[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 2560.00, #queue-req: 0\n", 8000)), 0o644)
	return root
}

// BenchmarkStatusCommandVsHabit: the command a user types,
// `synthwatch status --json HOST`, timed as a whole process from exec to
// exit, alternating with the habit it replaces, `ssh HOST 'tail -n 20 LOG;
// wc -l …/raw_responses.jsonl'`, on the same link: a real sshd behind a
// proxy that adds the RTT, cold on both sides (no ControlMaster, a new
// connection each run). Reported: medians of each and their ratio.
func BenchmarkStatusCommandVsHabit(b *testing.B) {
	bin := testbin.Path(b)
	s := sshdtest.Start(b)
	root := statusRoot(b)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	defer px.Close()
	port := px.Addr()[strings.LastIndexByte(px.Addr(), ':')+1:]
	kh := filepath.Join(b.TempDir(), "kh")
	khb, _ := os.ReadFile(s.KnownHosts)
	os.WriteFile(kh, []byte(strings.Replace(string(khb), fmt.Sprint(s.Port), port, 1)), 0o644)
	cfg := filepath.Join(b.TempDir(), "ssh_config")
	os.WriteFile(cfg, nil, 0o600)
	env := append(os.Environ(), "SSH_AUTH_SOCK=", "XDG_CONFIG_HOME="+b.TempDir(), "XDG_STATE_HOME="+b.TempDir())
	ours := exec.Command(bin, "status", "--json", "-F", cfg, "-i", s.KeyPath, "-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"--root", root, s.User+"@127.0.0.1:"+port)
	habit := exec.Command("ssh", "-F", cfg, "-T", "-i", s.KeyPath, "-p", port, "-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"-o", "ControlMaster=no", "-o", "ControlPath=none", s.User+"@127.0.0.1",
		"tail -n 20 "+root+"/logs/inference_all.log; wc -l "+root+"/prepared/*/raw_responses.jsonl")
	run := func(c *exec.Cmd, want string) time.Duration {
		cmd := exec.Command(c.Path, c.Args[1:]...)
		cmd.Env = env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil || !strings.Contains(string(out), want) {
			b.Fatalf("%s: %v\n%s", c.Args[0], err, out)
		}
		return d
	}
	// host=shell: no synthwatch on the host (the old script's host), the
	// shell agent reads; host=deployed: synthwatch is there (--worker-bin,
	// as `synthwatch deploy` or the Go worker put it), its agent reads
	deployed := exec.Command(ours.Path, append(append([]string{}, ours.Args[1:len(ours.Args)-1]...), "--worker-bin", bin, ours.Args[len(ours.Args)-1])...)
	for _, host := range []struct {
		name string
		cmd  *exec.Cmd
	}{{"shell", ours}, {"deployed", deployed}} {
		for _, rtt := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond} {
			b.Run(fmt.Sprintf("host=%s/rtt=%dms", host.name, rtt.Milliseconds()), func(b *testing.B) {
				px.SetDelay(rtt / 2)
				var o, h []float64
				for b.Loop() {
					o = append(o, run(host.cmd, `"done": 1000`).Seconds())
					h = append(h, run(habit, "total").Seconds())
				}
				mo, mh := median(o), median(h)
				b.ReportMetric(mo, "s")
				b.ReportMetric(mh, "habit_s")
				b.ReportMetric(mo/mh, "x_habit")
				b.ReportMetric(mo/rtt.Seconds(), "RTTs")
				b.ReportMetric(mh/rtt.Seconds(), "habit_RTTs")
			})
		}
	}
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

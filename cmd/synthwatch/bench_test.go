package main

import (
	"fmt"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// cpuSeconds reads utime+stime of a process.
func cpuSeconds(pid string) float64 {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; USER_HZ is 100 on Linux
}

// BenchmarkIdleCPU: the dashboard's CPU over 60 s (SW_IDLE_SECONDS) with a
// 1 s poll over SSH and nothing changing on the host. Target: <= 1% of a core.
// SW_IDLE_PROFILE=FILE writes the dashboard's CPU profile.
func BenchmarkIdleCPU(b *testing.B) {
	secs := 60
	if v, err := strconv.Atoi(os.Getenv("SW_IDLE_SECONDS")); err == nil {
		secs = v
	}
	bin := testbin.Path(b)
	s := sshdtest.Start(b)
	root := b.TempDir()
	for i := 0; i < 10; i++ {
		d := filepath.Join(root, "prepared", fmt.Sprintf("B%d_cat", i))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 100)), 0o644)
		os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 50)), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(strings.Repeat("50/100 (0 err) 1.0 req/s avg_comp=1tok ETA=1m\n", 5000)), 0o644)
	// The agent is installed first: a first contact installs it beside the
	// first polls, and its compression (about 0.4 s of CPU) would land in
	// the idle window (BenchmarkDashboardFirstTableVsHabit measures it).
	if out, errOut, code := deployBin(b, s, s.User+"@"+s.Addr()); code != 0 {
		b.Fatalf("deploy: code %d: %s%s", code, out, errOut)
	}
	for b.Loop() {
		session := fmt.Sprintf("idle%d", time.Now().UnixNano())
		args := []string{"new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-e", "XDG_STATE_HOME=" + b.TempDir(), "-e", "SSH_AUTH_SOCK=",
			"-e", "SYNTHWATCH_CPUPROFILE=" + os.Getenv("SW_IDLE_PROFILE"), // where it goes, if anywhere
			bin, "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes", "--root", root, "--poll", "1s", s.User + "@" + s.Addr()}
		if out, err := tmuxCmd(args...).CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		time.Sleep(3 * time.Second) // connect and first polls
		pid, _ := tmuxCmd("display", "-p", "-t", session, "#{pane_pid}").Output()
		p := strings.TrimSpace(string(pid))
		c0 := cpuSeconds(p)
		time.Sleep(time.Duration(secs) * time.Second)
		c1 := cpuSeconds(p)
		tmuxCmd("kill-session", "-t", session).Run()
		if c0 < 0 || c1 < 0 {
			b.Fatal("could not read the dashboard's CPU time")
		}
		b.ReportMetric(100*(c1-c0)/float64(secs), "%core")
	}
}

// BenchmarkNightCPU: the dashboard (the real binary, in tmux) over a link
// with 50 ms of RTT (a loopback proxy in front of sshd), at the default
// poll, while a job writes what the users' 930 tok/s makes (two 1000-token
// records every 2 s, a server log line a second, a progress line every 50
// records), for 60 s (SW_IDLE_SECONDS). It reports the dashboard's CPU,
// the bytes that crossed the link an hour, and the job's own new bytes an
// hour (what reading the records costs at least). Goals: < 1 % of a core,
// < 5 MB an hour.
func BenchmarkNightCPU(b *testing.B) {
	secs := 60
	if v, err := strconv.Atoi(os.Getenv("SW_IDLE_SECONDS")); err == nil {
		secs = v
	}
	bin := testbin.Path(b)
	s := sshdtest.Start(b)
	root := b.TempDir()
	cat := "B2_opencodeinstruct"
	for _, n := range []string{"B1_glaive", cat, "B3_magicoder"} {
		d := filepath.Join(root, "prepared", n)
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(strings.Repeat(`{"id":1}`+"\n", 6000)), 0o644)
	}
	raw := filepath.Join(root, "prepared", cat, "raw_responses.jsonl")
	os.WriteFile(raw, []byte(strings.Repeat(`{"id":1,"completion_tokens":1000}`+"\n", 2500)), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	wlog, slog := filepath.Join(root, "logs", "inference_all.log"), filepath.Join(root, "logs", "sglang_inference.log")
	os.WriteFile(wlog, []byte("Processing: "+cat+" (SHORT)\n"+strings.Repeat("2450/6000 (0 err) 0.9 req/s avg_comp=1000tok ETA=1.4h\n", 5000)), 0o644)
	os.WriteFile(slog, []byte(""), 0o644)
	rec := `{"id":"x","category":"` + cat + `","run":"r","prompt_tokens":310,"completion_tokens":1000,"finish_reason":"stop","content":"` + strings.Repeat("w", 4000) + `"}`
	job := exec.Command("sh", "-c", `i=0; while :; do
  printf '%s\n%s\n' "$1" "$1" >>"$2"
  printf '[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 930.00, #queue-req: 0\n' >>"$3"
  printf '[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 930.00, #queue-req: 0\n' >>"$3"
  i=$((i + 2)); [ $((i % 50)) -lt 2 ] && echo "$((2500 + i))/6000 (0 err) 0.9 req/s avg_comp=1000tok ETA=1.4h" >>"$4"
  sleep 2
done`, "synthwatch", rec, raw, slog, wlog)
	if err := job.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { job.Process.Kill(); job.Wait() })
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(px.Close)
	px.SetDelay(25 * time.Millisecond)
	port := px.Addr()[strings.LastIndexByte(px.Addr(), ':')+1:]
	kh := filepath.Join(b.TempDir(), "kh")
	khb, _ := os.ReadFile(s.KnownHosts)
	os.WriteFile(kh, []byte(strings.Replace(string(khb), s.Addr()[len("127.0.0.1:"):], port, 1)), 0o644)
	for b.Loop() {
		session := fmt.Sprintf("night%d", time.Now().UnixNano())
		args := []string{"new-session", "-d", "-s", session, "-x", "120", "-y", "40", "-e", "XDG_STATE_HOME=" + b.TempDir(), "-e", "SSH_AUTH_SOCK=",
			bin, "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + kh, "-o", "StrictHostKeyChecking=yes", "--root", root, s.User + "@" + px.Addr()}
		if out, err := tmuxCmd(args...).CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		time.Sleep(5 * time.Second) // connect and first polls
		pid, _ := tmuxCmd("display", "-p", "-t", session, "#{pane_pid}").Output()
		p := strings.TrimSpace(string(pid))
		fi0, _ := os.Stat(raw)
		c0, w0 := cpuSeconds(p), px.Bytes.Load()
		time.Sleep(time.Duration(secs) * time.Second)
		c1, w1 := cpuSeconds(p), px.Bytes.Load()
		fi1, _ := os.Stat(raw)
		screen, _ := tmuxCmd("capture-pane", "-p", "-t", session).Output()
		tmuxCmd("kill-session", "-t", session).Run()
		if c0 < 0 || c1 < 0 {
			b.Fatal("could not read the dashboard's CPU time")
		}
		if !strings.Contains(string(screen), cat) {
			b.Fatalf("the dashboard shows no job:\n%s", screen)
		}
		hour := 3600 / float64(secs)
		b.ReportMetric(100*(c1-c0)/float64(secs), "%core")
		b.ReportMetric(float64(w1-w0)*hour/1e6, "MB/hour")
		b.ReportMetric(float64(fi1.Size()-fi0.Size())*hour/1e6, "job_MB/hour")
	}
}

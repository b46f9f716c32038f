package main

import (
	"fmt"
	"os"
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

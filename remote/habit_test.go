package remote

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// hostCost is what the sshd process tree spent: CPU seconds and bytes read
// (rchar: read(2) bytes, page cache included). Reaped children count, as the
// kernel folds them into their parent's figures.
type hostCost struct{ cpu, read float64 }

func treeCost(root int) hostCost {
	var c hostCost
	pids := append([]int{root}, sshdtest.Descendants(root)...)
	for i, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat)[strings.LastIndexByte(string(stat), ')')+2:])
		for k := 11; k <= 12; k++ { // utime, stime
			v, _ := strconv.ParseFloat(f[k], 64)
			c.cpu += v / 100
		}
		if i == 0 { // cutime, cstime of reaped children, once (the root holds them all)
			for k := 13; k <= 14; k++ {
				v, _ := strconv.ParseFloat(f[k], 64)
				c.cpu += v / 100
			}
		}
		io, _ := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
		for _, l := range strings.Split(string(io), "\n") {
			if strings.HasPrefix(l, "rchar:") {
				v, _ := strconv.ParseFloat(strings.TrimSpace(l[6:]), 64)
				c.read += v
			}
		}
	}
	return c
}

// running is the set of processes below root.
func running(root int) map[int]bool {
	had := map[int]bool{}
	for _, pid := range sshdtest.Descendants(root) {
		had[pid] = true
	}
	return had
}

// waitReaped waits until every process below root that is not in had has
// been reaped (a zombie still shows in /proc, uncounted).
func waitReaped(b *testing.B, root int, had map[int]bool) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		left := 0
		for _, pid := range sshdtest.Descendants(root) {
			if !had[pid] {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d processes of the habit's connection not reaped after 10 s", left)
		}
	}
}

func sshdPID(b *testing.B, s *sshdtest.Server) int {
	out, err := exec.Command("sh", "-c", "pgrep -o -f "+Quote("sshd -D -e -f "+filepath.Join(s.Dir, "sshd_config"))).Output()
	if err != nil {
		b.Fatalf("sshd pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return pid
}

// BenchmarkPollVsHabit: synthwatch's steady poll against the loop users run
// today, `ssh host 'tail -5 LOG; for f in prepared/*/raw_responses.jsonl; do
// wc -l <"$f"; done'`, on the same root: 8 categories with 4 GB of JSONL
// (SW_HABIT_GB to change), 100 lines appended between polls. Per poll: bytes
// on the wire, host CPU-seconds and host bytes read.
func BenchmarkPollVsHabit(b *testing.B) {
	gb := 4.0
	if v, err := strconv.ParseFloat(os.Getenv("SW_HABIT_GB"), 64); err == nil {
		gb = v
	}
	s := sshdtest.Start(b)
	root := b.TempDir()
	line := `{"id":"B1-1","category":"B1","completion_tokens":3800,"content":"` + strings.Repeat("z", 15000) + "\"}\n"
	per := int(gb * (1 << 30) / 8 / float64(len(line)))
	p := &Poller{}
	for i := 0; i < 8; i++ {
		f := filepath.Join(root, "prepared", fmt.Sprintf("B%d_cat", i+1), "raw_responses.jsonl")
		os.MkdirAll(filepath.Dir(f), 0o755)
		fh, _ := os.Create(f)
		w := bufio.NewWriterSize(fh, 1<<20)
		for n := 0; n < per; n++ {
			w.WriteString(line)
		}
		w.Flush()
		fh.Close()
		p.Counters = append(p.Counters, NewCounter(f))
	}
	logPath := filepath.Join(root, "logs", "inference_all.log")
	os.MkdirAll(filepath.Dir(logPath), 0o755)
	writeFile(b, logPath, strings.Repeat("50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h\n", 1000))
	p.Tails = append(p.Tails, NewTail(logPath))
	exec.Command("sh", "-c", "cat "+Quote(root)+"/prepared/*/raw_responses.jsonl > /dev/null").Run() // page cache: both sides alike

	px, h := benchHost(b, s)
	master := sshdPID(b, s)
	p.Poll(context.Background(), h) // cold start, not counted
	// between polls the category being worked on gains 100 records (and its log 2 lines)
	appendAll := func() {
		appendFile(b, p.Counters[2].Path, strings.Repeat(line, 100))
		appendFile(b, logPath, strings.Repeat("51/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h\n", 2))
	}
	habit := `tail -5 ` + Quote(logPath) + `; for f in ` + Quote(root) + `/prepared/*/raw_responses.jsonl; do wc -l <"$f"; done`
	_, port, _ := strings.Cut(px.Addr(), ":")
	kh := filepath.Join(b.TempDir(), "kh")
	writeFile(b, kh, strings.Replace(mustRead(b, s.KnownHosts), s.Addr()[len("127.0.0.1:"):], port, 1))
	var ours, theirs hostCost
	var ourWire, theirWire float64
	n := 0
	for b.Loop() {
		appendAll()
		c0, w0, had := treeCost(master), h.Wire(), running(master)
		res := p.Poll(context.Background(), h)
		waitReaped(b, master, had) // a count run on the host counts once reaped
		c1, w1 := treeCost(master), h.Wire()
		for _, u := range res.Counts {
			if u.Err != nil {
				b.Fatal(u.Err)
			}
		}
		ours.cpu += c1.cpu - c0.cpu
		ours.read += c1.read - c0.read
		ourWire += float64(w1.Sent + w1.Received - w0.Sent - w0.Received)

		c0, before := treeCost(master), px.Bytes.Load() // the habit, on the same state
		had = running(master)
		out, err := exec.Command("ssh", "-T", "-i", s.KeyPath, "-p", port, "-o", "UserKnownHostsFile="+kh, "-o", "BatchMode=yes", s.User+"@127.0.0.1", habit).Output()
		if err != nil {
			b.Fatalf("habit: %v %s", err, out)
		}
		waitReaped(b, master, had) // its connection's CPU reaches the master's cutime only once reaped
		c1 = treeCost(master)
		theirs.cpu += c1.cpu - c0.cpu
		theirs.read += c1.read - c0.read
		theirWire += float64(px.Bytes.Load() - before)
		n++
	}
	f := float64(n)
	b.ReportMetric(ourWire/f, "B_wire/poll")
	b.ReportMetric(theirWire/f, "habit_B_wire/poll")
	b.ReportMetric(ours.cpu/f, "host_cpu_s/poll")
	b.ReportMetric(theirs.cpu/f, "habit_host_cpu_s/poll")
	b.ReportMetric(ours.read/f, "host_read_B/poll")
	b.ReportMetric(theirs.read/f, "habit_host_read_B/poll")
}

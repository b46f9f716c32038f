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

	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// pollRoot makes 10 category files and 2 logs, as a pipeline root has.
func pollRoot(b *testing.B) (dir string, p *Poller) {
	dir = b.TempDir()
	p = &Poller{}
	for i := 0; i < 10; i++ {
		f := filepath.Join(dir, fmt.Sprintf("B%d_cat", i), "raw_responses.jsonl")
		os.MkdirAll(filepath.Dir(f), 0o755)
		writeFile(b, f, strings.Repeat(`{"id":1,"content":"x"}`+"\n", 100))
		p.Counters = append(p.Counters, NewCounter(f))
	}
	for _, n := range []string{"inference_all.log", "sglang_inference.log"} {
		f := filepath.Join(dir, n)
		writeFile(b, f, strings.Repeat("[2026-01-01 00:00:00] Decode batch, #running-req: 1\n", 100))
		p.Tails = append(p.Tails, NewTail(f))
	}
	return dir, p
}

const benchRTT = 20 * time.Millisecond

// BenchmarkIdlePoll: bytes and round trips of one poll of 10 category files
// and 2 logs when nothing changed. Target: <= 4 KB and 1 RTT. The proxy adds
// 10 ms each way, so one round trip is 20 ms.
func BenchmarkIdlePoll(b *testing.B) {
	s := sshdtest.Start(b)
	_, p := pollRoot(b)
	px, h := benchHost(b, s)
	px.SetDelay(benchRTT / 2)
	for i := 0; i <= aheadPolls; i++ { // first attach and count, then until nothing is read ahead
		p.Poll(context.Background(), h)
	}
	w0, start, n := h.Wire(), time.Now(), 0
	for b.Loop() {
		p.Poll(context.Background(), h)
		n++
	}
	w1, el := h.Wire(), time.Since(start)
	b.ReportMetric(float64(w1.Sent+w1.Received-w0.Sent-w0.Received)/float64(n), "B/poll")
	b.ReportMetric(el.Seconds()/float64(n)/benchRTT.Seconds(), "RTTs/poll")
}

// BenchmarkGrownPoll: the same when every file grew by 100 lines.
func BenchmarkGrownPoll(b *testing.B) {
	s := sshdtest.Start(b)
	dir, p := pollRoot(b)
	px, h := benchHost(b, s)
	px.SetDelay(benchRTT / 2)
	p.Poll(context.Background(), h)
	line := `{"id":"B1-12345","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":210,"content":"` + strings.Repeat("y", 120) + "\"}\n"
	var added, wire int64
	var el time.Duration
	n := 0
	for b.Loop() {
		b.StopTimer()
		for _, c := range p.Counters {
			appendFile(b, c.Path, strings.Repeat(line, 100))
			added += int64(100 * len(line))
		}
		for _, t := range p.Tails {
			appendFile(b, t.Path, strings.Repeat("[2026-01-01 00:00:01] Decode batch, #running-req: 2, gen throughput (token/s): 10.00\n", 100))
			added += 100 * 87
		}
		w0, start := h.Wire(), time.Now()
		b.StartTimer()
		p.Poll(context.Background(), h)
		b.StopTimer()
		w1 := h.Wire()
		wire += w1.Sent + w1.Received - w0.Sent - w0.Received
		el += time.Since(start)
		n++
		b.StartTimer()
	}
	_ = dir
	b.ReportMetric(float64(wire)/float64(n), "B/poll")
	b.ReportMetric(float64(added)/float64(n), "added_B/poll")
	b.ReportMetric(el.Seconds()/float64(n)/benchRTT.Seconds(), "RTTs/poll")
}

func benchHost(b *testing.B, s *sshdtest.Server, extra ...string) (*faultproxy.Proxy, *SSH) {
	p, err := faultproxy.Start(s.Addr())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	kh := filepath.Join(b.TempDir(), "kh")
	line := strings.Replace(mustRead(b, s.KnownHosts), s.Addr()[len("127.0.0.1:"):], p.Addr()[len("127.0.0.1:"):], 1)
	writeFile(b, kh, line)
	o := opts(b, s)
	o.Target = s.User + "@" + p.Addr()
	o.Opts = append([]string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes"}, extra...)
	return p, dial(b, o)
}

func mustRead(b testing.TB, p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	return string(data)
}

// BenchmarkColdStart2GB: counting 2 GB of JSONL in 8 files over SSH from a
// cold start (connect included), next to `ssh host wc -l` of the same
// files in the same run. Targets: < 1 MB on the wire, <= 1.2x the time.
func BenchmarkColdStart2GB(b *testing.B) {
	s := sshdtest.Start(b)
	dir := b.TempDir()
	var files []string
	line := `{"id":"B1-1","completion_tokens":3800,"content":"` + strings.Repeat("z", 15000) + "\"}\n"
	for i := 0; i < 8; i++ {
		f := filepath.Join(dir, fmt.Sprintf("B%d.jsonl", i))
		fh, _ := os.Create(f)
		w := bufio.NewWriterSize(fh, 1<<20)
		for n := 0; n < (2<<30)/8/len(line); n++ {
			w.WriteString(line)
		}
		w.Flush()
		fh.Close()
		files = append(files, f)
	}
	exec.Command("cat", files...).Run() // page cache, as on a host that just wrote them
	var ours, theirs time.Duration
	var ourBytes, theirBytes int64
	for b.Loop() {
		px, err := faultproxy.Start(s.Addr())
		if err != nil {
			b.Fatal(err)
		}
		kh := filepath.Join(b.TempDir(), "kh")
		writeFile(b, kh, strings.Replace(mustRead(b, s.KnownHosts), s.Addr()[len("127.0.0.1:"):], px.Addr()[len("127.0.0.1:"):], 1))
		o := opts(b, s)
		o.Target, o.Opts = s.User+"@"+px.Addr(), []string{"UserKnownHostsFile=" + kh, "StrictHostKeyChecking=yes"}
		start := time.Now()
		h, err := Dial(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		p := &Poller{}
		for _, f := range files {
			p.Counters = append(p.Counters, NewCounter(f))
		}
		res := p.Poll(context.Background(), h)
		ours += time.Since(start)
		h.Close()
		ourBytes += px.Bytes.Load()
		var total int64
		for _, c := range res.Counts {
			if c.Err != nil {
				b.Fatal(c.Err)
			}
			total += c.Lines
		}
		before := px.Bytes.Load()
		start = time.Now()
		_, port, _ := strings.Cut(px.Addr(), ":")
		out, err := exec.Command("ssh", append([]string{"-T", "-i", s.KeyPath, "-p", port, "-o", "UserKnownHostsFile=" + kh, "-o", "BatchMode=yes", s.User + "@127.0.0.1", "wc", "-l"}, files...)...).Output()
		theirs += time.Since(start)
		theirBytes += px.Bytes.Load() - before
		px.Close()
		if err != nil {
			b.Fatal(err)
		}
		fields := strings.Fields(string(out))
		if wc, _ := strconv.ParseInt(fields[len(fields)-2], 10, 64); wc != total {
			b.Fatalf("counted %d, wc -l %d", total, wc)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(ourBytes)/n, "B_wire")
	b.ReportMetric(float64(theirBytes)/n, "ssh_wc_B_wire")
	b.ReportMetric(ours.Seconds()/n, "s")
	b.ReportMetric(theirs.Seconds()/n, "ssh_wc_s")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "x_ssh_wc")
}

// BenchmarkDeadLink: how long a black-holed link takes to be declared dead,
// and to come back once the link is restored, with OpenSSH-style defaults
// (15 s x 3) and a fast setting (1 s x 2). Run with -benchtime=1x.
func BenchmarkDeadLink(b *testing.B) {
	for _, c := range []struct {
		name  string
		extra []string
	}{{"default", nil}, {"fast", []string{"ServerAliveInterval=1", "ServerAliveCountMax=2", "ConnectTimeout=2"}}} {
		b.Run(c.name, func(b *testing.B) {
			s := sshdtest.Start(b)
			var detect, back time.Duration
			for b.Loop() {
				px, h := benchHost(b, s, c.extra...)
				// a link in use: its SFTP session up (it opens beside the first
				// requests, and a black hole before that ends the link at its timeout)
				if _, err := h.Stat(context.Background(), "/"); err != nil {
					b.Fatal(err)
				}
				px.SetMode(faultproxy.BlackHole)
				start := time.Now()
				detect += waitPhase(b, h, Reconnecting, 2*time.Minute)
				_ = start
				px.SetMode(faultproxy.Forward)
				back += waitPhase(b, h, Connected, time.Minute)
				h.Close()
			}
			b.ReportMetric(detect.Seconds()/float64(b.N), "detect_s")
			b.ReportMetric(back.Seconds()/float64(b.N), "reconnect_s")
		})
	}
}

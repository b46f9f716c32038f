package pipeline

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// BenchmarkIdleWatch50k: the laptop's cost of watching an idle root of
// 50,000 categories (SW_SCALE_N to change; 3 prompts and 1 record each)
// over a real sshd, the deployed binary answering as the agent: after the
// first screen and two steady polls, each idle poll's laptop CPU
// (getrusage of this process: the agent's is the host's), its wall time,
// the heap the watch holds (after a GC) and the RSS, after the warm-up
// polls and after the last, and the peak RSS.
func BenchmarkIdleWatch50k(b *testing.B) {
	if os.Getenv("SW_SCALE_N") == "" {
		b.Setenv("SW_SCALE_N", "50000")
	}
	n, root, p := scaleRoot(b)
	h := p.dial(b)
	defer h.Close()
	w := NewWatcher(h, Options{Host: "bench", Root: root, ServerURL: closedURL(b), WorkerBin: testbin.Path(b)}, nil)
	poll := func() snapshot.Snapshot {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		return w.Poll(ctx)
	}
	for i := 0; i < 3; i++ {
		poll()
	}
	rss0, heap0 := procStatusKB(b, "VmRSS"), liveHeap()
	if f := os.Getenv("SW_IDLE_PROFILE"); f != "" {
		out, err := os.Create(f)
		must(b, err)
		must(b, pprof.StartCPUProfile(out))
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	cpu0, polls, start := cpuTime(), 0, time.Now()
	for b.Loop() {
		if s := poll(); len(s.Categories) != n {
			b.Fatalf("%d categories, want %d", len(s.Categories), n)
		}
		polls++
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(polls), "cpu_ms/poll")
	b.ReportMetric(time.Since(start).Seconds()/float64(polls), "s/poll")
	b.ReportMetric(float64(heap0)/(1<<20), "heap_first_MB")
	b.ReportMetric(float64(liveHeap())/(1<<20), "heap_last_MB")
	b.ReportMetric(float64(rss0)/1024, "RSS_first_MB")
	b.ReportMetric(float64(procStatusKB(b, "VmRSS"))/1024, "RSS_last_MB")
	if f := os.Getenv("SW_IDLE_HEAP"); f != "" { // what the watch holds, by where it was made
		out, err := os.Create(f)
		must(b, err)
		runtime.GC()
		must(b, pprof.WriteHeapProfile(out))
		out.Close()
	}
	runtime.KeepAlive(w) // the watch's state is what the heap holds
	b.ReportMetric(float64(procStatusKB(b, "VmHWM"))/1024, "peak_RSS_MB")
}

// liveHeap is the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// cpuTime is this process's user and system time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStatusKB reads a kB field of /proc/self/status (VmRSS, VmHWM).
func procStatusKB(tb testing.TB, field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	must(tb, err)
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	tb.Fatalf("no %s in /proc/self/status", field)
	return 0
}

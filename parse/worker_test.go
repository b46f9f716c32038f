package parse

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseWorkerLine(t *testing.T) {
	cases := []struct {
		line string
		want WorkerLine
	}{
		{"Loading tokenizer from /shared/kimi-k2.5-int4... Vocab size: 163840 Model: /shared/kimi-k2.5-int4",
			WorkerLine{Kind: WModel, Tokenizer: "/shared/kimi-k2.5-int4", Vocab: 163840, Model: "/shared/kimi-k2.5-int4"}},
		{"============================================================", WorkerLine{Kind: WSeparator}},
		{"Processing: B1_glaive (SHORT)", WorkerLine{Kind: WProcessing, Category: "B1_glaive", Class: "SHORT"}},
		{"Processing: B5_long_reasoning (LONG)", WorkerLine{Kind: WProcessing, Category: "B5_long_reasoning", Class: "LONG"}},
		{"B1_glaive: 10000 prompts", WorkerLine{Kind: WPrompts, Category: "B1_glaive", Prompts: 10000}},
		{"B2_opencodeinstruct: 7000 prompts, 1652 resumed, 5348 to go",
			WorkerLine{Kind: WResume, Category: "B2_opencodeinstruct", Prompts: 7000, Resumed: 1652, ToGo: 5348}},
		{"B1_glaive: skipped (already done: 9998 records)", WorkerLine{Kind: WSkip, Category: "B1_glaive", Done: 9998}},
		{"Running 10000 requests (concurrency=150, max_tokens=10240)...",
			WorkerLine{Kind: WRunning, Requests: 10000, Concurrency: 150, MaxTokens: 10240}},
		{"50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
			WorkerLine{Kind: WProgress, Done: 50, Total: 10000, ReqPerSec: 1.1, AvgComp: 217, ETA: 144 * time.Minute, ETAKnown: true}},
		{"9950/10000 (3 err) 12.5 req/s avg_comp=3800tok ETA=40s",
			WorkerLine{Kind: WProgress, Done: 9950, Total: 10000, Errors: 3, ReqPerSec: 12.5, AvgComp: 3800, ETA: 40 * time.Second, ETAKnown: true}},
		{"100/200 (0 err) 0.0 req/s avg_comp=0tok ETA=?", WorkerLine{Kind: WProgress, Done: 100, Total: 200}},
		{"500/1000 (1 err) 2.0 req/s avg_comp=250tok ETA=15m",
			WorkerLine{Kind: WProgress, Done: 500, Total: 1000, Errors: 1, ReqPerSec: 2, AvgComp: 250, ETA: 15 * time.Minute, ETAKnown: true}},
		{"Traceback (most recent call last):", WorkerLine{Kind: WError, Traceback: true}},
		{`  File "/root/infer.py", line 88, in main`, WorkerLine{Kind: WError, Traceback: true}},
		{"requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=30000)", WorkerLine{Kind: WError}},
		{"ERROR: server returned 500", WorkerLine{Kind: WError}},
		{"panic: runtime error: index out of range", WorkerLine{Kind: WError, Traceback: true}},
		{"12 things happened", WorkerLine{Kind: WOther}},
		{"note: something", WorkerLine{Kind: WOther}},
		{"", WorkerLine{Kind: WOther}},
	}
	for _, c := range cases {
		got := ParseWorkerLine(c.line)
		c.want.Text = c.line
		if got != c.want {
			t.Errorf("ParseWorkerLine(%q)\n got %+v\nwant %+v", c.line, got, c.want)
		}
	}
}

// The formatting helpers are what the worker writes; the parser must read them back.
func TestWorkerFormatsRoundTrip(t *testing.T) {
	for _, eta := range []time.Duration{0, 59 * time.Second, 30 * time.Minute, 5 * time.Hour} {
		l := ParseWorkerLine(FormatProgress(7, 9, 1, 3.25, 210, eta, true))
		if l.Kind != WProgress || l.Done != 7 || l.Total != 9 || l.Errors != 1 || l.AvgComp != 210 || !l.ETAKnown {
			t.Fatalf("progress round trip: %+v", l)
		}
		if d := l.ETA - eta; d > 3*time.Minute || d < -3*time.Minute {
			t.Errorf("eta %v read back as %v", eta, l.ETA)
		}
	}
	if l := ParseWorkerLine(FormatProgress(1, 2, 0, 0, 0, 0, false)); l.ETAKnown {
		t.Errorf("unknown ETA read as known")
	}
	if l := ParseWorkerLine(FormatSkip("B1_glaive", 9998)); l.Kind != WSkip || l.Done != 9998 {
		t.Errorf("skip %+v", l)
	}
	if l := ParseWorkerLine(FormatResume("B2_x", 7000, 1652, 5348)); l.Kind != WResume || l.ToGo != 5348 {
		t.Errorf("resume %+v", l)
	}
}

// FuzzParseWorkerLine: any line keeps its text, and a line read as
// progress reads back the same through FormatProgress, the worker's writer.
func FuzzParseWorkerLine(f *testing.F) {
	for _, s := range []string{"50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h", "B1: 5 prompts, 1 resumed, 4 to go", "Processing: x (", "Running 5 requests (concurrency=", "B: skipped (already done: ", "Loading tokenizer from ...Vocab size:", "1/ (x err)",
		"1/2 (0 err) nan req/s avg_comp=1tok ETA=NaNh", "1/2 (0 err) 1.0 req/s avg_comp=1tok ETA=1e300h", "1/2 (0 err) +Inf req/s ETA=2562047.8h", "3/4 (-1 err) 2.25 req/s avg_comp=-3tok ETA=119.6m"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := ParseWorkerLine(s)
		if l.Text != s {
			t.Fatal("text not kept")
		}
		if l.Kind != WProgress {
			return
		}
		if l.ETA < 0 || math.IsNaN(l.ReqPerSec) || math.IsInf(l.ReqPerSec, 0) {
			t.Fatalf("%q: ETA %v, %v req/s", s, l.ETA, l.ReqPerSec)
		}
		checkProgressRoundTrip(t, l.Done, l.Total, l.Errors, l.ReqPerSec, l.AvgComp, l.ETA, l.ETAKnown)
	})
}

// FuzzFormatProgressRoundTrip: every progress line the worker can write
// parses back to its figures (ETA and req/s to their printed precision).
func FuzzFormatProgressRoundTrip(f *testing.F) {
	f.Add(50, 10000, 0, 1.1, 217, int64(2.4*float64(time.Hour)), true)
	f.Add(0, 0, 0, 0.0, 0, int64(0), false)
	f.Add(7, 9, 1, 3.25, 210, int64(119*time.Minute+59*time.Second), true)
	f.Fuzz(func(t *testing.T, done, total, errs int, rps float64, avg int, eta int64, known bool) {
		if done < 0 || total < 0 || errs < 0 || avg < 0 || rps < 0 || math.IsNaN(rps) || math.IsInf(rps, 0) {
			return // the worker writes none of these
		}
		checkProgressRoundTrip(t, done, total, errs, rps, avg, time.Duration(eta), known)
	})
}

func checkProgressRoundTrip(t *testing.T, done, total, errs int, rps float64, avg int, eta time.Duration, known bool) {
	t.Helper()
	line := FormatProgress(done, total, errs, rps, avg, eta, known)
	l := ParseWorkerLine(line)
	if l.Kind != WProgress || l.Done != done || l.Total != total || l.Errors != errs || l.AvgComp != avg {
		t.Fatalf("%q read back as %+v", line, l)
	}
	if d := math.Abs(l.ReqPerSec - rps); d > 0.05+1e-12*rps {
		t.Fatalf("%q: %v req/s read back as %v", line, rps, l.ReqPerSec)
	}
	wantKnown := known && eta >= 0
	if l.ETAKnown != wantKnown {
		t.Fatalf("%q: ETA known %v read back as %v", line, wantKnown, l.ETAKnown)
	}
	if !wantKnown {
		return
	}
	tol := time.Second // "%ds": truncated
	switch {
	case eta >= 2*time.Hour:
		tol = 3*time.Minute + time.Duration(1e-9*float64(eta)) // "%.1fh"
	case eta >= 2*time.Minute:
		tol = 30 * time.Second // "%.0fm"
	}
	if d := l.ETA - eta; d > tol || d < -tol {
		t.Fatalf("%q: ETA %v read back as %v", line, eta, l.ETA)
	}
}

// The worker's heartbeat while every request hangs (worker.catRun.heartbeat)
// is an ordinary line: not progress, not an error, not the server waiting.
func TestWorkerHeartbeatIsNotProgress(t *testing.T) {
	for _, l := range []string{"waiting: 64 requests in flight, oldest 5m12s", "waiting: 1 requests in flight, oldest 1h0m5s"} {
		if k := ParseWorkerLine(l).Kind; k != WOther {
			t.Errorf("%q reads as %s", l, k)
		}
	}
}

// The old script's hang, as it logs it: each request that times out is one
// traceback (chained or not) ending in its exception line; the Go worker's
// failure lines and a bare exception line are one each; progress and
// ordinary lines are none.
func TestFailureTallyCountsEachFailureOnce(t *testing.T) {
	timeout := "Traceback (most recent call last):\n" +
		"  File \"/opt/run_inference.py\", line 88, in call\n" +
		"    resp = urllib.request.urlopen(req, timeout=600)\n" +
		"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
		"  File \"/usr/lib/python3.11/socket.py\", line 706, in readinto\n" +
		"    return self._sock.recv_into(b)\n" +
		"TimeoutError: timed out\n"
	chained := "Traceback (most recent call last):\n" +
		"  File \"/usr/lib/python3.11/urllib/request.py\", line 1348, in do_open\n" +
		"    raise URLError(err)\n" +
		"ConnectionRefusedError: [Errno 111] Connection refused\n\n" +
		"During handling of the above exception, another exception occurred:\n\n" +
		"Traceback (most recent call last):\n" +
		"  File \"/opt/run_inference.py\", line 88, in call\n" +
		"urllib.error.URLError: <urlopen error [Errno 111] Connection refused>\n"
	log := "Processing: B3_magicoder (SHORT)\nRunning 300 requests (concurrency=8, max_tokens=2048)...\n" +
		strings.Repeat(timeout, 3) + chained + "200/600 (0 err) 1.3 req/s avg_comp=236tok ETA=5.2m\n" +
		"TimeoutError: timed out\n" + "B3_magicoder: id b3-7 failed: read: connection reset by peer\n" +
		"socket.timeout: timed out\n" // the exception line of a traceback cut off above: not an error line either
	var tally FailureTally
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if tally.Fold(ParseWorkerLine(l)) {
			n++
		}
	}
	if n != 6 {
		t.Fatalf("%d failures, want 6 (3 tracebacks, 1 chained pair, 1 bare TimeoutError, 1 Go failure line)", n)
	}
}

// The old script's threads time out together and print their tracebacks
// line by line, interleaved (as Python 3.11 does with traceback.print_exc
// in 8 threads): still one failure each.
func TestFailureTallyInterleavedTracebacks(t *testing.T) {
	var b strings.Builder
	const n = 8
	for i := 0; i < n; i++ {
		b.WriteString("Traceback (most recent call last):\n")
	}
	for i := 0; i < n; i++ {
		b.WriteString("  File \"/usr/lib/python3.11/socket.py\", line 706, in readinto\n    return self._sock.recv_into(b)\n           ^^^^^^^^^^^^^^^^^^^^^^^\n")
		if i%2 == 1 {
			b.WriteString("TimeoutError: timed out\nTimeoutError: timed out\n")
		}
	}
	var tally FailureTally
	got := 0
	for _, l := range strings.Split(b.String(), "\n") {
		if tally.Fold(ParseWorkerLine(l)) {
			got++
		}
	}
	if got != n {
		t.Fatalf("%d failures from %d interleaved tracebacks", got, n)
	}
}

// fieldsInto splits as strings.Fields does, Unicode spaces and invalid
// UTF-8 included: a progress line parses as it did before it.
func TestFieldsIntoIsFields(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a  b\tc\n", "50/100 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h",
		"x\u00a0y\u0085z\u2003w", "\xff a\xfe\x80 b", "a\u3000b ", strings.Repeat("f ", 30)} {
		var buf [4]string
		if got, want := fieldsInto(buf[:0], s), strings.Fields(s); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("fieldsInto(%q) = %q, want %q", s, got, want)
		}
	}
}

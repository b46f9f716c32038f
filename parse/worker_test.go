package parse

import (
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

func FuzzParseWorkerLine(f *testing.F) {
	for _, s := range []string{"50/10000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h", "B1: 5 prompts, 1 resumed, 4 to go", "Processing: x (", "Running 5 requests (concurrency=", "B: skipped (already done: ", "Loading tokenizer from ...Vocab size:", "1/ (x err)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l := ParseWorkerLine(s)
		if l.Text != s {
			t.Fatal("text not kept")
		}
	})
}

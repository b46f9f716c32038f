package parse

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// Every line the worker (and the kill action) writes for the dashboard is
// made by a Format function or constant here, and ParseWorkerLine reads
// each back as its own kind with its figures: what the worker writes is
// what the dashboard reads.
func TestWorkerWritesWhatTheDashboardReads(t *testing.T) {
	cases := []struct {
		line string
		want WorkerLine
	}{
		{Separator, WorkerLine{Kind: WSeparator}},
		{FormatProcessing("B1_glaive", "SHORT"), WorkerLine{Kind: WProcessing, Category: "B1_glaive", Class: "SHORT"}},
		{FormatPrompts("B1_glaive", 10000), WorkerLine{Kind: WPrompts, Category: "B1_glaive", Prompts: 10000}},
		{FormatResume("B2_x", 7000, 1652, 5348), WorkerLine{Kind: WResume, Category: "B2_x", Prompts: 7000, Resumed: 1652, ToGo: 5348}},
		{FormatSkip("B3", 9998), WorkerLine{Kind: WSkip, Category: "B3", Done: 9998}},
		{FormatRunning(5348, 150, 10240), WorkerLine{Kind: WRunning, Requests: 5348, Concurrency: 150, MaxTokens: 10240}},
		{FormatProgress(50, 10000, 2, 1.1, 217, 3*time.Hour, true), WorkerLine{Kind: WProgress, Done: 50, Total: 10000, Errors: 2,
			ReqPerSec: 1.1, AvgComp: 217, ETA: 3 * time.Hour, ETAKnown: true}},
		{FinishedLine, WorkerLine{Kind: WFinished}},
		// a reason that looks like an error is still the gate's line, not an error line
		{FormatWaiting(DefaultServerURL, `Get "http://127.0.0.1:30000/health": dial tcp: connection refused (Error 111)`),
			WorkerLine{Kind: WWaiting, Server: DefaultServerURL, Reason: `Get "http://127.0.0.1:30000/health": dial tcp: connection refused (Error 111)`}},
		{FormatWaiting("http://10.0.0.1:8000", "status 503"), WorkerLine{Kind: WWaiting, Server: "http://10.0.0.1:8000", Reason: "status 503"}},
		{FormatBack(DefaultServerURL, 65*time.Second+400*time.Millisecond), WorkerLine{Kind: WBack, Server: DefaultServerURL, Down: 65 * time.Second}},
		{FormatKill(4242, 30*time.Second), WorkerLine{Kind: WKill, PID: 4242}},
	}
	for _, c := range cases {
		got := ParseWorkerLine(c.line)
		c.want.Text = c.line
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseWorkerLine(%q)\n got %+v\nwant %+v", c.line, got, c.want)
		}
	}
}

// The lines as users and old logs know them still read the same: the
// formats above did not drift from them.
func TestWorkerLinesKeepTheirKnownText(t *testing.T) {
	for got, want := range map[string]string{
		FormatProcessing("B1_glaive", "SHORT"):   "Processing: B1_glaive (SHORT)",
		FormatPrompts("B1_glaive", 10000):        "B1_glaive: 10000 prompts",
		FormatRunning(10000, 150, 10240):         "Running 10000 requests (concurrency=150, max_tokens=10240)...",
		FormatWaiting("http://h:1", "EOF"):       "Server http://h:1 unavailable (EOF): waiting for /health",
		FormatBack("http://h:1", 90*time.Second): "Server http://h:1 is back after 1m30s",
		FormatKill(4242, 30*time.Second):         "synthwatch kill: stopping pid 4242 (SIGTERM, then SIGKILL after 30s)",
		FinishedLine:                             "All categories finished.",
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
	for _, l := range []string{"All categories finished!", "All categories finished"} { // the Python script's
		if k := ParseWorkerLine(l).Kind; k != WFinished {
			t.Errorf("%q: %v", l, k)
		}
	}
	for _, l := range []string{"4242/10000 (0 err)", KillMarker + "x", "Server x is up", "Server x unavailable: waiting for /health"} {
		if k := ParseWorkerLine(l).Kind; k == WKill || k == WWaiting || k == WBack {
			t.Errorf("%q read as %v", l, k)
		}
	}
}

// The runs.jsonl line the worker writes reads back whole.
func TestRunLineRoundTrip(t *testing.T) {
	in := RunLine{Run: "20261130T220000Z-7", PID: 7, StartedAt: "2026-11-30T22:00:00Z", Version: "v1", Server: DefaultServerURL, API: "chat",
		Snapshot: ServerSnapshot{Info: map[string]any{"kv_cache_dtype": "auto", "tp_size": 8.0}, ConfigKey: "44136fa355b3"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseRunLine(b)
	if err != nil || !reflect.DeepEqual(in, out) || !out.Snapshot.Known() {
		t.Fatalf("%s\nread back %+v, %v", b, out, err)
	}
	for _, s := range []ServerSnapshot{{ConfigKey: ConfigUnknown, Info: map[string]any{"a": 1}}, {ConfigKey: "abc"}, {Info: map[string]any{"a": 1}}} {
		if s.Known() {
			t.Errorf("%+v is known", s)
		}
	}
}

func TestLayoutPaths(t *testing.T) {
	l := Layout{Root: "/data/r"}
	for got, want := range map[string]string{
		l.WorkerLog():              "/data/r/logs/inference_all.log",
		l.ServerLog():              "/data/r/logs/sglang_inference.log",
		l.Manifest():               "/data/r/pipeline.toml",
		l.RunDir():                 "/data/r/run",
		l.WorkerJSON():             "/data/r/run/worker.json",
		l.KillNote():               "/data/r/run/synthwatch-kill",
		l.Prepared():               "/data/r/prepared",
		l.CategoryDir("B1"):        "/data/r/prepared/B1",
		l.Prompts("B1"):            "/data/r/prepared/B1/prompts.jsonl",
		l.Raw("B1"):                "/data/r/prepared/B1/raw_responses.jsonl",
		l.Errors("B1"):             "/data/r/prepared/B1/errors.jsonl",
		l.Runs("B1"):               "/data/r/prepared/B1/runs.jsonl",
		Layout{`/d/\[x]`}.Raw("*"): `/d/\[x]/prepared/*/raw_responses.jsonl`,
	} {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

// TestBannerRoundTrip: the run's banner gives back its run id and, from
// it, the run's start, the worker log's only clock.
func TestBannerRoundTrip(t *testing.T) {
	t.Parallel()
	line := FormatBanner("v1.2", 4242, "20261202T011500Z-4242-2", DefaultServerURL, "chat", 3)
	run, start, ok := ParseBanner(line)
	if !ok || run != "20261202T011500Z-4242-2" || !start.Equal(time.Date(2026, 12, 2, 1, 15, 0, 0, time.UTC)) {
		t.Fatalf("ParseBanner(%q) = %q %v %v", line, run, start, ok)
	}
	for _, l := range []string{"Processing: B1 (SHORT)", "synthwatch worker v1 (pid 1): server x", FormatKill(4242, time.Second)} {
		if _, _, ok := ParseBanner(l); ok {
			t.Errorf("ParseBanner(%q) took it for a banner", l)
		}
	}
}

// TestParseFormattedDurationRoundTrip: what FormatDuration writes reads
// back to itself (the report reads the dashboard's "laptop slept 7h02m").
func TestParseFormattedDurationRoundTrip(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{0, 45 * time.Second, 5*time.Minute + 3*time.Second, 12 * time.Minute, 7*time.Hour + 2*time.Minute, 51 * time.Hour} {
		s := FormatDuration(d)
		got, ok := ParseFormattedDuration(s)
		if !ok || FormatDuration(got) != s {
			t.Errorf("ParseFormattedDuration(%q) = %v %v, want what formats as %q", s, got, ok, s)
		}
	}
	for _, s := range []string{"", "-", "slept", "-5m", "3dx"} {
		if _, ok := ParseFormattedDuration(s); ok {
			t.Errorf("ParseFormattedDuration(%q) read a duration", s)
		}
	}
}

// TestHeartbeatRoundTrip: the worker's "no answer" line reads back.
func TestHeartbeatRoundTrip(t *testing.T) {
	t.Parallel()
	n, d, ok := ParseHeartbeat(FormatHeartbeat(64, 5*time.Minute+12*time.Second+300*time.Millisecond))
	if !ok || n != 64 || d != 5*time.Minute+12*time.Second {
		t.Fatalf("ParseHeartbeat: %d %v %v", n, d, ok)
	}
	if _, _, ok := ParseHeartbeat("waiting: for Godot"); ok {
		t.Error("read a line that is no heartbeat")
	}
	if k := ParseWorkerLine(FormatHeartbeat(3, time.Minute)).Kind; k != WOther {
		t.Errorf("ParseWorkerLine reads the heartbeat as %v, want an ordinary line", k)
	}
}

package parse

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// mixedLog is the fixture log repeated, with decode lines weighted the way a
// busy server writes them.
func mixedLog(tb testing.TB) []byte {
	fixture, err := os.ReadFile("../testdata/logs/sglang_mixed.log")
	if err != nil {
		tb.Fatal(err)
	}
	decode := []byte("[2026-02-03 14:07:00 DP1 TP1] Decode batch, #running-req: 72, #cached-token: 0, #token: 300112, token usage: 0.29, cuda graph: True, gen throughput (token/s): 930.10, #queue-req: 0\n")
	var buf bytes.Buffer
	for buf.Len() < 4<<20 {
		buf.Write(fixture)
		buf.Write(bytes.Repeat(decode, 20))
	}
	return buf.Bytes()
}

// BenchmarkParseSGLangLog is the whole read path for a server log: split,
// then parse with traceback attachment. Target: >= 100 MB/s on one core.
func BenchmarkParseSGLangLog(b *testing.B) {
	data := mixedLog(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var r ServerLog
		s := NewSplitter(0)
		n := 0
		emit := func(ServerEvent) { n++ }
		s.Feed(data, func(l []byte, _ bool) { r.Feed(string(l), emit) })
		r.Flush(emit)
	}
}

func FuzzParseServerLine(f *testing.F) {
	data, _ := os.ReadFile("../testdata/logs/sglang_mixed.log")
	for _, l := range bytes.Split(data, []byte{'\n'}) {
		f.Add(string(l))
	}
	f.Add("INFO 08-14 10:22:31 metrics.py:341] Avg prompt throughput: 1 tokens/s, Avg generation throughput: x")
	f.Add("(E pid=1) INFO 01-01 00:00:00 [a:1] Engine 000: Prefix cache hit rate: GPU: ")
	f.Add("[10:00:00] [gpu_id=] Decode batch [")
	f.Fuzz(func(t *testing.T, line string) {
		ev := ParseServerLine(line)
		if ev.Kind == SBatch && ev.Batch.Phase == 0 {
			t.Fatal("batch without phase")
		}
		var r ServerLog
		r.Feed(line, func(ServerEvent) {})
		r.Feed(line, func(ServerEvent) {})
		r.Flush(func(ServerEvent) {})
	})
}

// FuzzParseMetrics: every value is the sum that expfmt's own parse gives,
// each figure is the first of its names (or the highest sample, for usage),
// and a known dialect has its running count.
func FuzzParseMetrics(f *testing.F) {
	f.Add(sglangMetrics)
	f.Add("# TYPE a gauge\na 1\n")
	f.Add("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{dp=\"0\"} 3\nsglang:num_running_reqs{dp=\"1\"} NaN\nsglang:num_running_reqs{dp=\"2\"} 4\n")
	f.Add("vllm:num_requests_running 1\nvllm:kv_cache_usage_perc{e=\"0\"} 0.5\nvllm:kv_cache_usage_perc{e=\"1\"} 0.9\nsglang:swa_token_usage +Inf\n")
	f.Add("# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total 10\nsglang:cached_tokens_total 4\n# TYPE sglang:x histogram\nsglang:x_bucket{le=\"+Inf\"} 1\nsglang:x_sum 1\nsglang:x_count 1\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParseMetrics(strings.NewReader(text))
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, werr := p.TextToMetricFamilies(strings.NewReader(text))
		if (err == nil) != (werr == nil) {
			t.Fatalf("err %v, expfmt %v", err, werr)
		}
		if err != nil {
			return
		}
		// the oracle counts each family once, as the server means it: the
		// per-priority breakdown left out when its total is there, the ranks
		// that report one batch (tp, pp, moe_ep) taken at their highest, the
		// rest added; sglang_ names read as sglang:
		sums, highest := map[string]float64{}, map[string]float64{}
		for raw, fam := range fams {
			name := raw
			if rest, ok := strings.CutPrefix(raw, "sglang_"); ok {
				name = "sglang:" + rest
			}
			if !strings.HasPrefix(name, "sglang:") && !strings.HasPrefix(name, "vllm:") {
				continue
			}
			type sample struct {
				key   string
				v     float64
				total bool
			}
			var all []sample
			for _, mt := range fam.GetMetric() {
				var v float64
				switch {
				case mt.Gauge != nil:
					v = mt.GetGauge().GetValue()
				case mt.Counter != nil:
					v = mt.GetCounter().GetValue()
				case mt.Untyped != nil:
					v = mt.GetUntyped().GetValue()
				default:
					continue
				}
				if math.IsNaN(v) || math.IsInf(v, 0) {
					continue
				}
				var key []string
				total := true
				for _, l := range mt.GetLabel() {
					switch l.GetName() {
					case "tp_rank", "pp_rank", "moe_ep_rank", "attn_tp_rank":
						continue
					case "priority":
						total = l.GetValue() == ""
					}
					key = append(key, l.GetName()+"="+l.GetValue())
				}
				sort.Strings(key)
				all = append(all, sample{strings.Join(key, "\x00"), v, total})
			}
			anyTotal := false
			for _, x := range all {
				anyTotal = anyTotal || x.total
			}
			groups := map[string]float64{}
			var order []string // added in the order first seen, as the parser adds
			for _, x := range all {
				if anyTotal && !x.total {
					continue
				}
				g, ok := groups[x.key]
				if !ok {
					order = append(order, x.key)
				}
				if !ok || x.v > g {
					groups[x.key] = x.v
				}
			}
			for _, k := range order {
				v := groups[k]
				if h, ok := highest[name]; !ok || v > h {
					highest[name] = v
				}
				sums[name] += v
			}
		}
		if len(sums) != len(m.Values) {
			t.Fatalf("values %v, expfmt sums %v", m.Values, sums)
		}
		for name, v := range sums {
			if got, ok := m.Values[name]; !ok || got != v && !(math.IsInf(got, 0) && math.IsInf(v, 0)) {
				t.Fatalf("%s = %v, expfmt sum %v", name, got, v)
			}
		}
		first := func(names ...string) Opt[float64] {
			for _, n := range names {
				if v, ok := sums[n]; ok {
					return some(v)
				}
			}
			return Opt[float64]{}
		}
		for _, c := range []struct {
			field string
			got   Opt[float64]
			names []string
		}{
			{"RunningReqs", m.RunningReqs, []string{"sglang:num_running_reqs", "vllm:num_requests_running"}},
			{"QueueReqs", m.QueueReqs, []string{"sglang:num_queue_reqs", "vllm:num_requests_waiting"}},
			{"GenTokens", m.GenTokens, []string{"sglang:generation_tokens_total", "vllm:generation_tokens_total"}},
			{"PromptTokens", m.PromptTokens, []string{"sglang:prompt_tokens_total", "vllm:prompt_tokens_total"}},
			{"Requests", m.Requests, []string{"sglang:num_requests_total", "vllm:request_success_total"}},
		} {
			if want := first(c.names...); c.got != want && !(c.got.OK && math.IsInf(c.got.V, 0) && math.IsInf(want.V, 0)) {
				t.Fatalf("%s %+v, want %+v", c.field, c.got, want)
			}
		}
		var usage Opt[float64]
		for _, n := range []string{"sglang:token_usage", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"} {
			if v, ok := highest[n]; ok {
				usage = some(v)
				break
			}
		}
		for _, n := range []string{"sglang:swa_token_usage", "sglang:mamba_usage"} {
			if v, ok := highest[n]; ok && (!usage.OK || v > usage.V) {
				usage = some(v)
			}
		}
		if m.TokenUsage != usage {
			t.Fatalf("TokenUsage %+v, want the fullest sample %+v", m.TokenUsage, usage)
		}
		if m.Dialect != DialectUnknown && !m.RunningReqs.OK {
			t.Fatalf("dialect %v without a running count", m.Dialect)
		}
	})
}

// BenchmarkParseVsGrep: the parser over a page-cached 500 MB SGLang log
// (SW_PARSE_MB to change), next to `grep -c 'Decode batch'` on the same file:
// the floor of "just reading it".
func BenchmarkParseVsGrep(b *testing.B) {
	mb := 500
	if v, err := strconv.Atoi(os.Getenv("SW_PARSE_MB")); err == nil {
		mb = v
	}
	chunk := mixedLog(b)
	path := filepath.Join(b.TempDir(), "sglang_inference.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for size < int64(mb)<<20 {
		n, _ := f.Write(chunk)
		size += int64(n)
	}
	f.Close()
	exec.Command("cat", path).Run() // page cache
	b.SetBytes(size)
	var batches int
	for b.Loop() {
		fh, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		var r ServerLog
		s := NewSplitter(0)
		batches = 0
		emit := func(e ServerEvent) {
			if e.Kind == SBatch && e.Batch.Phase == Decode {
				batches++
			}
		}
		buf := make([]byte, 4<<20)
		for {
			n, err := fh.Read(buf)
			s.Feed(buf[:n], func(l []byte, _ bool) { r.Feed(string(l), emit) })
			if err != nil {
				break
			}
		}
		r.Flush(emit)
		fh.Close()
	}
	start := time.Now()
	out, err := exec.Command("grep", "-c", "Decode batch", path).Output()
	if err != nil {
		b.Fatal(err)
	}
	grepS := time.Since(start).Seconds()
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); n != batches {
		b.Fatalf("parser found %d decode lines, grep %d", batches, n)
	}
	b.ReportMetric(float64(size)/1e6/grepS, "grep_MB/s")
}

// recordShapes are one 15 KB record as the worker writes it (sealed) and
// as the Python script's json.dumps does, escapes and all, or not.
func recordShapes() []struct{ name, line string } {
	content := strings.Repeat("lorem ipsum dolor sit amet ", 555)
	sealedLine := bytes.TrimSuffix(SealRecord([]byte(`{"id":"B1-7","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","content":"`+content+`"}`)), []byte{'\n'})
	pyContent := strings.Repeat(`lorem ipsum \u00e9t\u00e9 \"dolor\" sit\namet `, 333)
	half, pyHalf := content[:len(content)/2], pyContent[:len(pyContent)/2]
	pyHalf = pyHalf[:strings.LastIndex(pyHalf, " ")] // not within an escape
	return []struct{ name, line string }{
		{"sealed", string(sealedLine)},
		{"python", `{"category": "B1", "id": "\u00e9t\u00e9-7", "run": "r", "content": "` + pyContent + `", "prompt_tokens": 12, "completion_tokens": 3800, "finish_reason": "stop", "latency_s": 1.5}`},
		{"python-plain-text", `{"category": "B1", "id": "p7", "run": "r", "content": "` + content + `", "completion_tokens": 3800}`},
		// a thinking model's: half reasoning, half answer (what the gate reads)
		{"sealed-reasoning", string(bytes.TrimSuffix(SealRecord([]byte(`{"id":"B1-7","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","content":"`+half+`","reasoning_content":"`+half+`"}`)), []byte{'\n'}))},
		{"sealed-generate-think", string(bytes.TrimSuffix(SealRecord([]byte(`{"id":"B1-7","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","text":"<think>\n`+half+`</think>\n\n`+half+`"}`)), []byte{'\n'}))},
		// an answer in English with k's and "think" in it: what the gate's
		// marker search meets at its worst in prose
		{"sealed-english", string(bytes.TrimSuffix(SealRecord([]byte(`{"id":"B1-7","category":"B1","run":"r","prompt_tokens":12,"completion_tokens":3800,"finish_reason":"stop","latency_s":1.5,"finished_at":"2026-11-29T00:00:00Z","content":"`+strings.Repeat("I think we should keep looking back at the kernel's task queue; ", 235)+`"}`)), []byte{'\n'}))},
		{"python-reasoning", `{"id": "p7", "timestamp": 1764374400.5, "content": "` + pyHalf + `", "reasoning_content": "` + pyHalf + `", "finish_reason": "stop", "usage": {"prompt_tokens": 12, "completion_tokens": 3800}}`},
	}
}

// BenchmarkRecordHead: ParseRecordHead alone on one 15 KB record in cache:
// the worker's own (sealed) shape and the Python script's json.dumps shape.
func BenchmarkRecordHead(b *testing.B) {
	for _, c := range recordShapes() {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if h, err := ParseRecordHead(line); err != nil || h.CompletionTokens != 3800 {
					b.Fatal(h, err)
				}
			}
		})
	}
}

// BenchmarkRecordFacts: what the token sums read of each record (its
// head, its run, how it ended and whether its answer is empty), on the
// shapes of BenchmarkRecordHead: the outcome's cost is the difference.
func BenchmarkRecordFacts(b *testing.B) {
	for _, c := range recordShapes() {
		line := []byte(c.line)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if f, err := ParseRecordFacts(line); err != nil || f.CompletionTokens != 3800 || !f.Outcome.Answer {
					b.Fatal(f, err)
				}
			}
		})
	}
}

// BenchmarkParseWorkerLog: ParseWorkerLine over a worker log as a first
// read meets it (the 1 MB a status reads back): mostly progress lines,
// with the headers, category lines and an error among them.
func BenchmarkParseWorkerLog(b *testing.B) {
	var sb strings.Builder
	for c := 0; c < 5; c++ {
		fmt.Fprintf(&sb, "==========\nProcessing: B%d_glaive (SHORT)\n==========\nB%d_glaive: 6000 prompts, 2400 resumed, 3600 to go\nRunning 3600 requests (concurrency=150, max_tokens=10240)...\n", c, c)
		for k := 0; k < 4000; k++ {
			fmt.Fprintf(&sb, "%d/6000 (%d err) 9.8 req/s avg_comp=248tok ETA=6m\n", k, k/1000)
		}
		sb.WriteString("  ERROR request 17 failed: HTTP 503\n")
	}
	lines := strings.Split(strings.TrimSuffix(sb.String(), "\n"), "\n")
	b.SetBytes(int64(sb.Len()))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			ParseWorkerLine(l)
		}
	}
}

package remote

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The start lines of a server log's head, as SGLang and vLLM print them,
// among the lines that are not: each whole, newest parse.MaxLaunches; an
// unfinished last line is not read.
func TestStartLines(t *testing.T) {
	decode := strings.Repeat("[2026-12-05 05:15:10 TP0] Decode batch. #running-req: 72, gen throughput (token/s): 931.00, #queue-req: 0, \n", 50)
	fp8 := "[2026-12-05 05:15:00] server_args=ServerArgs(model_path='/m', kv_cache_dtype='fp8_e4m3')"
	auto := "[2026-12-05 14:15:00] server_args={'model_path': '/m', 'kv_cache_dtype': 'auto'}"
	vllm := "(APIServer pid=15) INFO 12-05 16:00:00 [utils.py:233] non-default args: {'model': 'm'}"
	log := fp8 + "\n" + decode + auto + "\r\n" + decode + vllm + "\n" + decode + "[2026-12-05 17:00:00] server_args={'cut"
	got := string(startLines(strings.NewReader(log)))
	if want := fp8 + "\n" + auto + "\n" + vllm + "\n"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	var many bytes.Buffer
	for range 300 {
		many.WriteString(auto + "\n")
	}
	if n := bytes.Count(startLines(&many), []byte{'\n'}); n != 256 {
		t.Errorf("%d start lines kept of 300, want 256", n)
	}
	var big bytes.Buffer // a hostile log: 64 KB start lines
	for range 100 {
		big.WriteString("server_args={" + strings.Repeat("x", 64<<10) + "\n")
	}
	if got := startLines(&big); len(got) > maxStartBytes || len(got) == 0 {
		t.Errorf("%d bytes of start lines, bound %d", len(got), maxStartBytes)
	}
}

// BenchmarkStartLines: the agent's scan of a server log's head for its
// start lines, once per first attach (100 MB of decode lines, two starts).
func BenchmarkStartLines(b *testing.B) {
	line := "[2026-12-05 05:15:10 TP0] Decode batch. #running-req: 72, #token: 90000, token usage: 0.96, cuda graph: True, gen throughput (token/s): 931.00, #queue-req: 0, \n"
	var log bytes.Buffer
	log.WriteString("[2026-12-05 05:15:00] server_args=ServerArgs(model_path='/m', kv_cache_dtype='fp8_e4m3')\n")
	for log.Len() < 50<<20 {
		log.WriteString(line)
	}
	log.WriteString("[2026-12-05 14:15:00] server_args=ServerArgs(model_path='/m', kv_cache_dtype='auto')\n")
	for log.Len() < 100<<20 {
		log.WriteString(line)
	}
	data := log.Bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if n := bytes.Count(startLines(bytes.NewReader(data)), []byte{'\n'}); n != 2 {
			b.Fatal(n)
		}
	}
}

// status --local: a server log's start line 2 MB back, before the tail's
// history, comes with the first attach as the agent's does (the report,
// which reads the whole log, placed its records in its era; status said
// "unknown config").
func TestLocalTailStarts(t *testing.T) {
	fp8 := "[2026-12-05 05:15:00] server_args=ServerArgs(model_path='/m', kv_cache_dtype='fp8_e4m3')"
	auto := "[2026-12-05 14:15:00] server_args={'model_path': '/m', 'kv_cache_dtype': 'auto'}"
	decode := strings.Repeat("[2026-12-05 05:15:10 TP0] Decode batch. #running-req: 72, gen throughput (token/s): 931.00, #queue-req: 0, \n", 20000)
	p := filepath.Join(t.TempDir(), "sglang.log")
	if err := os.WriteFile(p, []byte(fp8+"\n"+decode+auto+"\n"+decode), 0o644); err != nil {
		t.Fatal(err)
	}
	tl := NewTail(p)
	tl.Digest = parse.DigestServer
	res := (&Poller{Tails: []*Tail{tl}}).Poll(context.Background(), Local{GoSums: true})
	if got := res.Tails[0].Starts; !slices.Contains(got, fp8) || !slices.Contains(got, auto) {
		t.Errorf("the first attach's start lines: %q", got)
	}
	if got := (&Poller{Tails: []*Tail{tl}}).Poll(context.Background(), Local{GoSums: true}).Tails[0].Starts; got != nil {
		t.Errorf("a later poll scans the log again: %d start lines", len(got))
	}
}

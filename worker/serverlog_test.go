package worker

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// refKVDtype is the obvious answer: the last whole line that parses.
func refKVDtype(data []byte) string {
	lines := strings.Split(string(data), "\n")
	lines = lines[:len(lines)-1] // the last piece has no newline
	for i := len(lines) - 1; i >= 0; i-- {
		if d, ok := parse.KVCacheDtype(lines[i]); ok {
			return d
		}
	}
	return ""
}

func TestScanKVCacheDtypeMatchesReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewSource(1))
	dtypes := []string{"bfloat16", "float8_e4m3fn", "float8_e5m2"}
	for trial := 0; trial < 120; trial++ {
		long := trial%2 == 1 // lines longer than maxKVLine (and tiny blocks only without them: a carried line is copied per block)
		var b bytes.Buffer
		for n := rng.Intn(60); n > 0; n-- {
			switch rng.Intn(8) {
			case 0:
				fmt.Fprintf(&b, "[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.%s\n", dtypes[rng.Intn(3)])
			case 1: // the needle inside a line that is not the scheduler's
				fmt.Fprintf(&b, "[2025-09-28 17:07:10] said Using KV cache dtype: torch.float8_e5m2\n")
			case 2: // a line longer than a block, and than maxKVLine
				n := rng.Intn(300)
				if long {
					n = rng.Intn(3 * maxKVLine)
				}
				fmt.Fprintf(&b, "[2025-09-28 17:07:10 TP0] %s\n", strings.Repeat("x", n))
			default:
				fmt.Fprintf(&b, "[2025-09-28 17:07:11 TP0] Decode batch, #running-req: %d, #token: 1, token usage: 0.01, gen throughput (token/s): 1.00, #queue-req: 0\n", rng.Intn(100))
			}
		}
		if rng.Intn(3) == 0 { // a line still being written
			b.WriteString("[2025-09-28 17:07:12 TP0] Using KV cache dtype: torch.uint8")
		}
		data := b.Bytes()
		want := refKVDtype(data)
		wantEnd := int64(bytes.LastIndexByte(data, '\n') + 1)
		blocks := []int{1, 7, 100, 4096}
		if long {
			blocks = []int{4096, maxKVLine + 3, kvScanBlock}
		}
		for _, block := range blocks {
			got, end, err := scanKVCacheDtype(bytes.NewReader(data), 0, int64(len(data)), block)
			if err != nil || got != want || (got == "" && end != wantEnd) {
				t.Fatalf("trial %d block %d: got %q end %d (%v), want %q end %d", trial, block, got, end, err, want, wantEnd)
			}
		}
	}
}

// A second look reads only what the log gained; the newest line wins, and
// a log without the line keeps what was found before.
func TestLastKVCacheDtypeIncremental(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sglang_inference.log")
	if d, err := lastKVCacheDtype(path); d != "" || err != nil {
		t.Fatalf("missing log: %q %v", d, err)
	}
	os.WriteFile(path, []byte("[2025-09-28 17:07:10 TP0] Using KV cache dtype: torch.bfloat16\n[2025-09-28 17:07:11 TP0] Decode batch\n"), 0o644)
	if d, _ := lastKVCacheDtype(path); d != "bfloat16" {
		t.Fatalf("got %q", d)
	}
	appendTo := func(s string) {
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(s)
		f.Close()
	}
	appendTo("[2025-09-28 17:07:12 TP0] Decode batch\n")
	if d, _ := lastKVCacheDtype(path); d != "bfloat16" {
		t.Fatalf("after growth: %q", d)
	}
	appendTo("[2025-09-28 18:00:00 TP0] Using KV cache dtype: torch.float8_e4m3fn\n")
	if d, _ := lastKVCacheDtype(path); d != "float8_e4m3fn" {
		t.Fatalf("after restart: %q", d)
	}
	// a new log (the server restarted and truncated it)
	os.WriteFile(path, []byte("[2025-09-29 00:00:00 TP0] Decode batch\n"), 0o644)
	if d, _ := lastKVCacheDtype(path); d != "" {
		t.Fatalf("after truncation: %q", d)
	}
}

package remote

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// The fallback's records are inflated into one buffer sized by gzip's
// trailer, at most 32 times the bytes that came: a trailer that claims
// 4 GB of a 44-byte answer costs about a kilobyte, not 4 GB (nor the
// bound, MaxExecOutput, that a gzip bomb could reach before and still can).
func TestGunzipSizedByTheTrailer(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	var w strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	for k := 50; w.Len() < 1<<20; k += 50 { // a worker log's progress lines, whose figures move
		fmt.Fprintf(&w, "%d/600000 (%d err) %.1f req/s avg_comp=%dtok ETA=%.1fh\n", k, k/9000, 8+4*rng.Float64(), 200+rng.IntN(120), rng.Float64()*20)
	}
	text := w.String()
	zw.Write([]byte(text))
	zw.Close()
	out, err := gunzipBounded(z.Bytes(), MaxExecOutput)
	if err != nil || string(out) != text {
		t.Fatalf("inflated %d bytes, %v; want the %d written", len(out), err, len(text))
	}
	if cap(out) > len(text)+16<<10 { // the allocator rounds to its pages; doubling would be 2x
		t.Errorf("a buffer of %d bytes for %d: grown, not sized by the trailer", cap(out), len(text))
	}

	lie := bytes.Clone(z.Bytes()[:40])
	lie = binary.LittleEndian.AppendUint32(lie, 0xffffffff)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, err := gunzipBounded(lie, MaxExecOutput); err == nil {
		t.Fatal("a cut stream with a lying trailer inflated without an error")
	}
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 1<<20 {
		t.Errorf("a 44-byte answer claiming 4 GB allocated %d bytes", got)
	}
}

package pipeline

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A prompts.jsonl is counted, never read: a cold status by the fallback
// counts it on the host (in the batch's one wc), so its bytes do not cross
// the link, and each category's target is its lines. The prompts here
// hold random text, which gzip cannot shrink: sent whole, they would be
// most of what crossed.
func TestFallbackCountsPromptsOnTheHost(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	root := t.TempDir()
	want := map[string]int64{"B1_glaive": 700, "B2_opencodeinstruct": 900, "B3_magicoder": 1100}
	var promptBytes int
	for cat, n := range want {
		var b strings.Builder
		for i := range n {
			r := make([]byte, 48)
			crand.Read(r)
			fmt.Fprintf(&b, `{"id":"%s-%d","messages":[{"role":"user","content":"%s"}]}`+"\n", cat, i, hex.EncodeToString(r))
		}
		promptBytes += b.Len()
		dir := filepath.Join(root, "prepared", cat)
		write(t, filepath.Join(dir, parse.PromptsFile), b.String())
		write(t, filepath.Join(dir, parse.RawFile), pyTokenRecords(cat, 0, 20, rng))
	}
	p := newProxied(t, sshdtest.Start(t))
	h := p.dial(t)
	defer h.Close()
	before := p.px.Bytes.Load()
	w := NewWatcher(h, Options{Host: "h", Root: root, ServerURL: closedURL(t), WorkerBin: filepath.Join(t.TempDir(), "no-synthwatch"), OnePoll: true}, nil)
	s := w.Poll(context.Background())
	crossed := p.px.Bytes.Load() - before
	if !strings.HasPrefix(s.Connection.Reader, "fallback") {
		t.Fatalf("read by %q, want the fallback", s.Connection.Reader)
	}
	if len(s.Categories) != len(want) {
		t.Fatalf("%d categories, want %d", len(s.Categories), len(want))
	}
	for _, c := range s.Categories {
		if c.Target != want[c.Name] || c.Done != 20 {
			t.Errorf("%s: target %d, done %d; want %d, 20", c.Name, c.Target, c.Done, want[c.Name])
		}
	}
	if crossed > int64(promptBytes)/4 { // whole, hex halves under gzip: 207 KB of these 447
		t.Fatalf("a cold status moved %d bytes: the prompts (%d bytes) crossed the link", crossed, promptBytes)
	}
	t.Logf("a cold status by the fallback moved %d bytes; the prompts hold %d", crossed, promptBytes)
}

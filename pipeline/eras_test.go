package pipeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// The old script's records over a server log's FP8 era and auto era, each
// start line more than the tail's 256 KB back: through the Go agent, a
// first poll (the dashboard's, and a one-shot status's) places them as
// Python's json module counts; through the fallback, which reads the
// log's last 256 KB and no record's time on the host, they are of unknown
// config or "not placed", never placed wrong.
func TestErasPlaceOldRecords(t *testing.T) {
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	root := t.TempDir()
	want := digesttest.EraWant(digesttest.EraNight(t, root))
	for _, c := range []struct {
		name, bin string
		once      bool
	}{{"agent", testbin.Path(t), false}, {"agent, one-shot", testbin.Path(t), true}, {"fallback", "", false}} {
		t.Run(c.name, func(t *testing.T) {
			h := p.dial(t)
			t.Cleanup(func() { h.Close() })
			o := Options{Host: "eras", Root: root, ServerURL: closedURL(t), WorkerBin: c.bin, OnePoll: c.once}
			if c.bin == "" {
				o.WorkerBin = filepath.Join(t.TempDir(), "no-synthwatch")
			}
			w := NewWatcher(h, o, nil)
			snap := w.Poll(context.Background())
			for i := 0; i < 5 && snap.TokensPartial; i++ {
				snap = w.Poll(context.Background())
			}
			for _, cat := range snap.Categories {
				got := snapshot.ConfigLine(cat.Configs)
				switch {
				case c.bin != "" && got != want[cat.Name]:
					t.Errorf("%s: %q, Python's json counts %q (read by %s)", cat.Name, got, want[cat.Name], snap.Connection.Reader)
				case c.bin == "" && (got == "" || inferredAny(cat.Configs) && cat.Name == "B2_opencodeinstruct"):
					t.Errorf("%s by the fallback: %q", cat.Name, got)
				}
				var sum int64
				for _, cc := range cat.Configs {
					sum += cc.Records
				}
				if sum != cat.Done {
					t.Errorf("%s: configs add up to %d of %d records: %q", cat.Name, sum, cat.Done, got)
				}
			}
		})
	}
}

func inferredAny(cs []parse.ConfigCount) bool {
	for _, c := range cs {
		if c.Inferred {
			return true
		}
	}
	return false
}

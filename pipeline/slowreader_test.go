package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A host with many categories and no synthwatch is read by the shell, a
// few processes per category each poll: the first screen says so and how
// to have the Go agent read it; a host with the binary reads them in one
// process and says nothing. Connection.Reader names which one read.
func TestManyCategoriesReadByTheFallbackSayDeploy(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	root := t.TempDir()
	for i := 0; i < slowReaderAt; i++ {
		d := filepath.Join(root, "prepared", fmt.Sprintf("C%04d", i))
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte("{\"id\":1}\n{\"id\":2}\n"), 0o644))
	}
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	first := func(bin string) snapshot.Snapshot {
		h := p.dial(t)
		t.Cleanup(func() { h.Close() })
		snap := NewWatcher(h, Options{Host: "gpu7", Root: root, ServerURL: closedURL(t), WorkerBin: bin}, nil).Poll(context.Background())
		if len(snap.Categories) != slowReaderAt {
			t.Fatalf("%d categories, want %d", len(snap.Categories), slowReaderAt)
		}
		return snap
	}
	snap := first(filepath.Join(root, "absent"))
	if snap.Connection.Reader != "fallback" || !hasAlert(snap, snapshot.WarnSlowReader, "synthwatch deploy gpu7") {
		t.Fatalf("read by %q, alerts %+v", snap.Connection.Reader, snap.Alerts)
	}
	snap = first(testbin.Path(t))
	if !strings.HasPrefix(snap.Connection.Reader, "go agent ") || hasAlert(snap, snapshot.WarnSlowReader, "") {
		t.Fatalf("with the binary: read by %q, alerts %+v", snap.Connection.Reader, snap.Alerts)
	}
}

func hasAlert(s snapshot.Snapshot, kind snapshot.WarningKind, text string) bool {
	for _, a := range s.Alerts {
		if a.Kind == kind && strings.Contains(a.Text, text) {
			return true
		}
	}
	return false
}

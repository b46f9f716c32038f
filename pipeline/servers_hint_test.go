package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The servers pipeline.toml named are kept between runs, so the next
// first poll probes them beside its reads rather than after pipeline.toml
// comes back; a hint that went stale is corrected by that poll and
// rewritten, and never stands for the manifest.
func TestServersHintProbesTheManifestsServerFirst(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	hint := filepath.Join(t.TempDir(), "state", "h.servers.json")
	a, b := closedURL(t), closedURL(t)
	man := func(url string) { write(t, filepath.Join(root, "pipeline.toml"), "server = \""+url+"\"\n") }
	first := func(w *Watcher) string { return w.sv.URLs()[0] }
	c := newClock()

	man(a)
	w := localWatcher(t, root, c, Options{HintPath: hint})
	if got := first(w); got == a {
		t.Fatalf("no hint yet, the first probe went to the manifest's %s", got)
	}
	if s := w.Poll(context.Background()); s.Server.URL != a || s.Server.URLFrom != "pipeline.toml server" {
		t.Fatalf("server %q from %q, want %s from pipeline.toml", s.Server.URL, s.Server.URLFrom, a)
	}
	if _, err := os.Stat(hint); err != nil {
		t.Fatalf("the hint was not written: %v", err)
	}

	w = localWatcher(t, root, c, Options{HintPath: hint})
	if got := first(w); got != a {
		t.Fatalf("with the hint, the first probe goes to %s, want the manifest's %s", got, a)
	}
	w.Poll(context.Background())

	man(b) // the job moved to another server
	w = localWatcher(t, root, c, Options{HintPath: hint})
	if s := w.Poll(context.Background()); s.Server.URL != b || s.Server.URLFrom != "pipeline.toml server" {
		t.Fatalf("a stale hint: server %q from %q, want %s", s.Server.URL, s.Server.URLFrom, b)
	}
	if got := first(localWatcher(t, root, c, Options{HintPath: hint})); got != b {
		t.Fatalf("the stale hint was not rewritten: the next run probes %s first", got)
	}

	write(t, hint, "not json")
	if got := first(localWatcher(t, root, c, Options{HintPath: hint})); got == a || got == b {
		t.Fatalf("a broken hint was taken: %s", got)
	}
}

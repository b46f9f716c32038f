package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// doneRoot is a finished job: category A with 20 of 20 records and a log
// that says all finished.
func doneRoot(t *testing.T) string {
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "A")
	os.MkdirAll(dir, 0o755)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	var p, r strings.Builder
	for i := 0; i < 20; i++ {
		fmt.Fprintf(&p, "{\"id\": %d}\n", i)
		fmt.Fprintf(&r, "{\"id\": %d, \"content\": \"ok\"}\n", i)
	}
	os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(p.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(r.String()), 0o644)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte("Processing: A (SHORT)\nAll categories finished.\n"), 0o644)
	return root
}

// A manifest that is there but cannot be used is a warning naming its
// path and why, whatever is wrong with it; the categories are still found
// from prepared/*/ with their records, and no pipeline_done is recorded
// from a job whose definition was not read (integrity 5: an empty table,
// exit 0, and a false "pipeline done: 0 records").
func TestUnreadableManifestIsNamed(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		make func(p string) error
		why  string
	}{
		"directory": {func(p string) error { return os.Mkdir(p, 0o755) }, "not a regular file (a directory)"},
		"fifo":      {func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file (a FIFO)"},
		"bad toml":  {func(p string) error { return os.WriteFile(p, []byte("[[categories]\nname = A\n"), 0o644) }, "toml"},
		"loop":      {func(p string) error { return os.Symlink(p, p) }, "too many levels of symbolic links"},
	} {
		t.Run(name, func(t *testing.T) {
			root := doneRoot(t)
			mp := filepath.Join(root, "pipeline.toml")
			if err := tc.make(mp); err != nil {
				t.Fatal(err)
			}
			w := localWatcher(t, root, newClock(), Options{})
			for i := 0; i < 3; i++ {
				s := w.Poll(context.Background())
				m := snapshot.ManifestError(s)
				if !strings.Contains(m, mp) || !strings.Contains(m, tc.why) {
					t.Fatalf("poll %d: manifest warning %q, want one naming %s and %q; warnings %q", i, m, mp, tc.why, s.Warnings)
				}
				if c := catByName(t, s, "A"); c.Done != 20 {
					t.Fatalf("poll %d: A done %d, want 20", i, c.Done)
				}
				for _, e := range s.Events {
					if e.Kind == "pipeline_done" {
						t.Fatalf("poll %d: %q recorded from a job whose manifest was not read", i, e.Text)
					}
				}
			}
		})
	}
}

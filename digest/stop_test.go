package digest_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
)

// The report counts what the dashboard calls a crash: a graceful stop and
// its teardown (a child's exit -15, SIGQUIT, kill_process_tree) are none,
// and a native crash's cleanup lines add nothing to the crash they follow.
// Lines: testdata/logs/faults/lifecycle_2026.log's sources.
func TestReportStopIsNoCrash(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, loc)
	for _, tc := range []struct {
		log     string
		crashes int
	}{
		{"[2026-11-29 03:00:00] The server is fired up and ready to roll!\n" +
			"[2026-11-29 03:10:00] SIGTERM received. signum=15 frame=None. Draining requests and shutting down...\n" +
			"[2026-11-29 03:10:02] Subprocess detokenizer (pid=12) crashed with exit code -15. Triggering SIGQUIT for cleanup...\n" +
			"[2026-11-29 03:10:02] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n" +
			"[2026-11-29 03:10:02] kill_process_tree called: parent_pid=59, include_parent=True, pid=59\n", 0},
		{"[2026-11-29 03:00:00] The server is fired up and ready to roll!\n" +
			"[2026-11-29 03:20:00] Subprocess scheduler_0 (pid=7391) crashed with exit code -6. Triggering SIGQUIT for cleanup...\n" +
			"[2026-11-29 03:20:05] No live scheduler processes found; skipping py-spy and CUDA coredump.\n" +
			"[2026-11-29 03:20:05] kill_process_tree called: parent_pid=71581, include_parent=True, pid=71581\n", 1},
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "logs"), 0o755)
		os.MkdirAll(filepath.Join(root, "prepared"), 0o755)
		if err := os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte(tc.log), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-2 * time.Hour), Now: now, Loc: loc})
		if err != nil {
			t.Fatal(err)
		}
		if s.Server.Crashes != tc.crashes {
			t.Errorf("%d crashes, want %d:\n%s", s.Server.Crashes, tc.crashes, tc.log)
		}
	}
}

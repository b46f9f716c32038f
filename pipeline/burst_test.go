package pipeline

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// TestLogBurstJumpsToTheNewest: the dashboard open, then 64 MB written at
// once to the worker log and to the server log. The next poll's panes end
// with the newest lines and say how much was skipped, rather than crawl a
// MB a poll behind (a 1 GB burst was half an hour behind); a line too long
// to show whole says it was cut. Here (--local) and over sshd, where the
// agent reads the tails.
func TestLogBurstJumpsToTheNewest(t *testing.T) {
	for _, where := range []string{"local", "ssh"} {
		t.Run(where, func(t *testing.T) {
			root := t.TempDir()
			mkdir(t, filepath.Join(root, "prepared", "A"))
			write(t, filepath.Join(root, "prepared", "A", "prompts.jsonl"), prompts("A", 3))
			wlog, slog := filepath.Join(root, "logs", "inference_all.log"), filepath.Join(root, "logs", "sglang_inference.log")
			write(t, wlog, "Processing: A\n")
			write(t, slog, "[2026-11-29 03:00:00] server up\n")
			h := remote.Host(remote.Local{})
			if where == "ssh" {
				h = sshdHost(t)
			}
			c := newClock()
			w := NewWatcher(h, Options{Root: root, Host: where, Now: c.now, ServerURL: closedURL(t)}, nil)
			poll(w)
			for _, p := range []string{wlog, slog} {
				burst(t, p, 64<<20)
				appendTo(t, p, strings.Repeat("y", 100<<10)+"\nthe newest line\n")
			}
			c.advance(2e9)
			poll(w)
			for name, r := range map[string]*snapshot.Ring{"worker": w.WorkerLog, "server": w.ServerLog} {
				ls := r.Lines()
				if len(ls) < 3 || ls[len(ls)-2] != "the newest line" || !strings.HasPrefix(ls[len(ls)-1], "… skipped 6") {
					t.Fatalf("%s pane does not end with the newest line and the skip: %q", name, ls[max(0, len(ls)-2):])
				}
				if !hasSuffix(ls, "… line cut at 65536 bytes") {
					t.Fatalf("%s pane does not name the cut line", name)
				}
			}
		})
	}
}

// burst appends n bytes of progress-like lines to p at once.
func burst(t *testing.T, p string, n int64) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	bw := bufio.NewWriterSize(f, 1<<20)
	for i, w := 0, int64(0); w < n; i++ {
		k, _ := fmt.Fprintf(bw, "%d/10000000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h\n", i)
		w += int64(k)
	}
	must(t, bw.Flush())
	must(t, f.Close())
}

func hasSuffix(ls []string, s string) bool {
	for _, l := range ls {
		if strings.HasSuffix(l, s) {
			return true
		}
	}
	return false
}

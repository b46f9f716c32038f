package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A category file that is a link to nothing (the scratch disk it lives on
// not mounted) reads alike through every reader: the fallback, the agent
// and --local's own. Its records: the category's state is unknown and
// the link's target is named, not "pending" with 0 done (the agent's and
// --local's answer before). Its prompts: the records' figure stands and
// the warning says which file failed, not "showing the last good figure".
func TestALinkToNothingReadsAlike(t *testing.T) {
	testgate.E2E(t)
	for _, tc := range []struct {
		rel   string
		state snapshot.CategoryState
		done  int64
		warn  string
	}{
		{"prepared/A/raw_responses.jsonl", snapshot.StateUnknown, 0, "A: its records cannot be counted: "},
		{"prepared/A/prompts.jsonl", snapshot.StateDone, 20, "A: a file beside its records cannot be counted (their 20 lines are counted): "},
	} {
		t.Run(filepath.Base(tc.rel), func(t *testing.T) {
			s := sshdtest.Start(t) // a home with no agent: the first reads are the fallback's
			root := finishedRoot(t)
			target := filepath.Join(root, "scratch", "not mounted.jsonl")
			p := filepath.Join(root, tc.rel)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			wantErr := p + ": a link to " + target + ", which is not there"
			var first string
			for _, via := range []string{"fallback", "fallback (installing", "go agent", "local"} {
				var out string
				if via == "local" {
					cmd := exec.Command(testbin.Path(t), "status", "--json", "--local", root, "--server-url", "http://127.0.0.1:1")
					cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
					b, _ := cmd.Output() // exit 0 or 2: the answer is the JSON
					out = string(b)
				} else {
					args := []string{"--json"}
					if via == "fallback" {
						args = append(args, "--no-install")
					}
					out, _ = runStatus(t, s, root, args...)
				}
				var snap snapshot.Snapshot
				if err := json.Unmarshal([]byte(out), &snap); err != nil {
					t.Fatalf("%s: %v: %s", via, err, out)
				}
				if via != "local" && !strings.HasPrefix(snap.Connection.Reader, via) {
					t.Fatalf("read by %q, want %s", snap.Connection.Reader, via)
				}
				c := catOf(t, snap, "A")
				if c.State != tc.state || c.Done != tc.done || c.CountError != wantErr {
					t.Errorf("%s: A %s, %d done, count error %q; want %s, %d, %q", via, c.State, c.Done, c.CountError, tc.state, tc.done, wantErr)
				}
				if w := strings.Join(snap.Warnings, "\n"); !strings.Contains(w, tc.warn+wantErr) {
					t.Errorf("%s: warnings %q, want %q", via, snap.Warnings, tc.warn+wantErr)
				}
				c.LastGrowth = nil // --local's file times have nanoseconds, the host readers' (stat %Y) whole seconds
				b, _ := json.Marshal(c)
				if first == "" {
					first = string(b)
				} else if string(b) != first {
					t.Errorf("%s reads A otherwise than the fallback:\n%s\n%s", via, b, first)
				}
			}
		})
	}
}

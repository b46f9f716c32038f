package remote

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// execRec is an SSH host that keeps the argv of each Exec.
type execRec struct {
	*SSH
	argvs [][]string
}

func (h *execRec) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	h.argvs = append(h.argvs, argv)
	return h.SSH.Exec(ctx, argv...)
}

// Each server takes a command line of its LineLimit whole: OpenSSH's
// sshd 64 KiB, Dropbear 8,900 bytes (it cuts the link past 9,000). On
// OpenSSH the fallback's batch then goes as it is, on the line (no
// base64, gunzip and eval on the host); on Dropbear packed; both answer
// alike.
func TestLineLimitOnEachServer(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	want := map[string]int{"openssh": OpenSSHMaxLine, "dropbear": MaxLine, "dropbear-nosftp": MaxLine}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			h := dial(t, opts(t, start(t)))
			ctx := context.Background()
			limit := LineLimit(h.ServerVersion())
			if limit != want[name] {
				t.Fatalf("%s (%q): line limit %d, want %d", name, h.ServerVersion(), limit, want[name])
			}
			// a line of the limit, as Exec frames it, exactly
			argv := func(n int) []string {
				return []string{"sh", "-c", `printf %s "$1" | wc -c`, "sh", strings.Repeat("y", n)}
			}
			n := limit
			for {
				line, stdin := WireCommand(framedArgv(execMark(), argv(n)), limit)
				if stdin == nil && len(line) == limit {
					break
				}
				if n--; n <= 0 {
					t.Fatal("no argument makes a line of the limit")
				}
			}
			r, err := h.Exec(ctx, argv(n)...)
			if err != nil || r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(n) {
				t.Fatalf("a %d-byte line: exit %d, %v, %q %q", limit, r.ExitCode, err, r.Stdout, r.Stderr)
			}

			dir := t.TempDir()
			for _, c := range []string{"B1", "B 2"} {
				must(t, os.MkdirAll(filepath.Join(dir, "prepared", c), 0o755))
				writeFile(t, filepath.Join(dir, "prepared", c, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", 20))
			}
			writeFile(t, filepath.Join(dir, "log"), strings.Repeat("line\n", 3000))
			batch := func() *Batch {
				b := &Batch{}
				tl := NewTail(filepath.Join(dir, "log"))
				tl.StartBack = 1000
				b.Tail(tl)
				b.Each(filepath.Join(dir, "prepared"), []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
				b.Exec(RecordSpanArgv("@END-t", filepath.Join(dir, "prepared"), "raw.jsonl", 600e9)...)
				return b
			}
			rec := &execRec{SSH: h}
			fb := NewFallback(rec)
			fb.SetUnpack(true)
			b := batch()
			if err := fb.Run(ctx, b); err != nil {
				t.Fatal(err)
			}
			if e := b.PollAsks().each; len(e) != 1 || e[0].files[filepath.Join(dir, "prepared", "B 2", "raw.jsonl")] == nil {
				t.Fatalf("%s: the fallback's batch answered no category", name)
			}
			sent := rec.argvs[0]
			if plainOK := name == "openssh"; packed(sent) == plainOK || len(sent) < 4 || (plainOK && sent[2] != b0Script()) {
				t.Fatalf("%s: the fallback's batch went packed %v, want packed %v", name, packed(sent), !plainOK)
			}
			if line, stdin := WireCommand(framedArgv(execMark(), sent), limit); stdin != nil || len(line) > limit {
				t.Fatalf("%s: the fallback's batch, %d bytes, %d on stdin", name, len(line), len(stdin))
			}
		})
	}
}

// b0Script is the fallback's script as a batch runs it (its argv[2]).
func b0Script() string { return (&Batch{}).Argv()[2] }

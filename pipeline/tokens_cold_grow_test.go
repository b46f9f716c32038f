package pipeline

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// A file that grows around coldSumScript's stat (before it: the stat sees
// more than the count did; after it: the count and the stat agree, and the
// sum reads only what they saw) is summed exactly, by either agent: the
// figures are those of the bytes the count read. The host's stat grows it
// (a shim first on sshd's PATH, for coldSumScript's stat alone); the
// growth is undone before the check when the count did not see it.
//
// The shell agent only: the Go agent answers coldSumScript in Go (its
// own stat, then the sum of exactly the bytes that stat saw), so no shim
// reaches it; remote's TestColdSumsCoverTheirStat holds it to that while
// the file grows, and the pipeline matches a sum to the count's hole by
// its size whichever agent answered.
func TestColdSumOfAFileThatGrows(t *testing.T) {
	testgate.E2E(t)
	real, err := exec.LookPath("stat")
	must(t, err)
	rng := rand.New(rand.NewPCG(27, 6))
	for _, when := range []string{"before", "after"} {
		for _, agent := range []string{"sh"} {
			t.Run(when+"/"+agent, func(t *testing.T) {
				root := t.TempDir()
				dir := filepath.Join(root, "prepared", "B3 big's")
				write(t, filepath.Join(dir, parse.PromptsFile), prompts("B3", 10000))
				raw := filepath.Join(dir, parse.RawFile)
				write(t, raw, pyTokenRecords("B3", 0, 2500, rng))
				fi, _ := os.Stat(raw)
				if fi.Size() <= remote.NewCounter("").RemoteAbove {
					t.Fatalf("the file must be counted on the host: %d bytes", fi.Size())
				}
				more := filepath.Join(t.TempDir(), "more")
				write(t, more, pyTokenRecords("B3", 2500, 40, rng))
				// once, and only by coldSumScript's stat of the file: the agent's
				// own stat -c '%s %n' of its answer's parts grew it a second time
				mark := filepath.Join(t.TempDir(), "grown")
				grow := "for a; do [ \"$3\" = '%s %n' ] && [ \"$a\" = " + remote.Quote(raw) + " ] && [ ! -e " + remote.Quote(mark) + " ] &&" +
					" { : >" + remote.Quote(mark) + "; cat " + remote.Quote(more) + " >>" + remote.Quote(raw) + "; }; done"
				body := grow + "\nexec " + real + ` "$@"`
				if when == "after" {
					body = real + " \"$@\"; s=$?\n" + grow + "\nexit $s"
				}
				shim := t.TempDir()
				must(t, os.WriteFile(filepath.Join(shim, "stat"), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
				sd := sshdtest.Start(t, sshdtest.WithConfig("SetEnv PATH="+shim+":/usr/local/bin:/usr/bin:/bin"))
				h := newProxied(t, sd).dial(t)
				t.Cleanup(func() { h.Close() })
				bin := filepath.Join(t.TempDir(), "no-synthwatch")
				if agent == "go" {
					bin = testbin.Path(t)
				}
				w := NewWatcher(h, Options{Host: "once", Root: root, ServerURL: closedURL(t), WorkerBin: bin, OnePoll: true}, nil)
				s := w.Poll(context.Background())
				if now, _ := os.Stat(raw); now.Size() == fi.Size() {
					t.Fatalf("the shim did not grow the file (read by %q)", s.Connection.Reader)
				}
				// the shell agent runs the cold batch's exec beside the count: the
				// count may have seen the file grown; the figures are those it saw
				if c := catByName(t, s, "B3 big's"); c.Lines == 2500 {
					must(t, os.Truncate(raw, fi.Size()))
				} else if c.Lines != 2540 {
					t.Fatalf("%d lines counted, want 2500 or 2540", c.Lines)
				}
				if bad := checkTokens(t, root, s); bad != "" {
					t.Fatalf("grown %s the stat: %s", when, bad)
				}
			})
		}
	}
}

// coldSumScript sums under a root whose name starts with a dash (a
// relative --root, read from the login's home): stat takes no path for
// an option.
func TestColdSumScriptUnderADashRoot(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	w := &Watcher{o: Options{Root: "-L dash root"}}
	raw := filepath.Join(home, w.layout().Prepared(), "B1", parse.RawFile)
	must(t, os.MkdirAll(filepath.Dir(raw), 0o755))
	write(t, raw, pyTokenRecords("B1", 0, 20, rand.New(rand.NewPCG(1, 2))))
	argv := append([]string{"sh", "-c", `cd "$1" && shift && exec "$@"`, "in-home", home}, w.coldSumArgv(0)...)
	r, err := remote.Local{}.Exec(context.Background(), argv...)
	must(t, err)
	fi, _ := os.Stat(raw)
	want := fmt.Sprintf("1 %d %s\n", fi.Size(), filepath.Join(w.layout().Prepared(), "B1", parse.RawFile))
	if string(r.Stderr) != want {
		t.Fatalf("stderr %q, want %q (exit %d)", r.Stderr, want, r.ExitCode)
	}
	if sums, err := parseTokenSums(r.Stdout, 1); err != nil || sums[0].err != "" {
		t.Fatalf("sums %+v %v", sums, err)
	}
}

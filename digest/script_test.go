package digest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// scriptRun digests a root the old script wrote, asking the host which
// processes write its log, as `synthwatch digest` does; now is a few
// minutes on, so the log's own age tells nothing.
func scriptRun(t *testing.T, r digesttest.Root, records int64) digest.Run {
	t.Helper()
	now := time.Now().Add(5 * time.Minute)
	s, err := digest.Build(digest.Options{Root: r.Dir, Since: now.Add(-time.Hour), Now: now, Alive: digest.ProcAlive, Writers: digest.ProcWriters})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range s.Runs {
		if run.ID == "" {
			if run.Records != records {
				t.Errorf("the script's run has %d records, want %d", run.Records, records)
			}
			return run
		}
	}
	t.Fatalf("no run of the script: %+v", s.Runs)
	return digest.Run{}
}

// The old script's runs end with a reason too, from its log's last words:
// "All categories finished"; a traceback whose outermost frame is its top
// level (an exception nothing caught: died, with the exception's line; a
// KeyboardInterrupt: stopped by a signal), while a request's time-out that
// print_exc printed on the way is no end; no word of an end and no
// process writing the log (a kill -9): died; and a process that has the
// log open: running. Each is said to be inferred. Real python3 processes.
func TestDigestOldScriptRunEnds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode, end, cause, how string
		records               int64
	}{
		{"finish", digest.EndFinished, "", `ends in "All categories finished"`, 20},
		{"crash", digest.EndDied, "KeyError: 'choices'", "an exception its top level did not catch", 17}, // B2's 8th answer
		{"interrupt", digest.EndSignal, "SIGINT (KeyboardInterrupt)", "KeyboardInterrupt", 20},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			r, cmd := digesttest.OldScript(t, c.mode)
			_ = cmd.Wait() // it ends by itself
			run := scriptRun(t, r, c.records)
			if run.End != c.end || run.EndCause != c.cause || !strings.HasPrefix(run.EndHow, "inferred") || !strings.Contains(run.EndHow, c.how) {
				log, _ := os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerLogPath)))
				t.Errorf("the script's run: %q cause %q (%s); want %q cause %q (%s)\nlog:\n%s", run.End, run.EndCause, run.EndHow, c.end, c.cause, c.how, log)
			}
		})
	}
	t.Run("hang-then-kill", func(t *testing.T) {
		t.Parallel()
		r, cmd := digesttest.OldScript(t, "hang")
		log := filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerLogPath))
		testgate.Eventually(t, time.Minute, "the script on B3_python", func() bool {
			b, _ := os.ReadFile(log)
			return strings.Contains(string(b), "Processing: B3_python") && strings.HasSuffix(string(b), "TimeoutError: timed out\n")
		})
		if run := scriptRun(t, r, 20); run.End != digest.EndRunning || run.PID != cmd.Process.Pid {
			t.Errorf("the hung script: %q pid %d (%s), want running, pid %d", run.End, run.PID, run.EndHow, cmd.Process.Pid)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		// its last traceback is a time-out print_exc printed: no end
		if run := scriptRun(t, r, 20); run.End != digest.EndDied || run.EndCause != "" || !strings.Contains(run.EndHow, "no process writes it") {
			t.Errorf("the killed script: %q cause %q (%s), want died with no cause, no process writing its log", run.End, run.EndCause, run.EndHow)
		}
	})
}

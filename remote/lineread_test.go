package remote

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// endlessBytes is how much a host prints without a newline in these tests:
// enough that buffering it whole (ReadString, a bytes.Buffer) would show
// as gigabytes of peak RSS, not the bound (a quarter under the race
// detector, whose time grows with every byte read).
var endlessBytes = map[bool]int64{false: 1 << 30, true: 256 << 20}[raceDetector]

// endlessCases each read an endless line from a real host, here or over a
// real sshd, through the laptop's read path. Each runs in a process of its
// own (childPeak), so its peak RSS is its own, not its neighbours'.
var endlessCases = map[string]func(t *testing.T, h Host){
	// a stream (the agent's): the line is cut at the reader's buffer, the
	// rest skipped a buffer at a time, and the answer after it still read
	"stream": func(t *testing.T, h Host) {
		sh, ok := h.(Streamer)
		if !ok {
			t.Fatalf("%T starts no streams", h)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		st, err := sh.Stream(ctx, nil, "sh", "-c", fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; printf '\n@H after\n'`, endlessBytes))
		must(t, err)
		defer st.Close()
		rd := bufio.NewReaderSize(st, 64<<10)
		line, err := ReadLine(rd)
		var cut *LineCutError
		if !errors.As(err, &cut) || cut.At != 64<<10 || len(line) != 64<<10 || err.Error() != "line cut at 65536 bytes" {
			t.Fatalf("ReadLine of an endless line: %d bytes, %v", len(line), err)
		}
		n, err := SkipLine(rd)
		if err != nil || n != endlessBytes-64<<10+1 {
			t.Fatalf("SkipLine: %d bytes, %v; want %d", n, err, endlessBytes-64<<10+1)
		}
		if line, err := ReadLine(rd); line != "@H after\n" || err != nil {
			t.Fatalf("the line after: %q, %v", line, err)
		}
	},
	// a command's output (Exec): kept to MaxExecOutput, then the command
	// is ended and the error names the cut
	"exec": func(t *testing.T, h Host) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		_, err := h.Exec(ctx, "sh", "-c", "cat /dev/zero")
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("output cut at %d bytes", MaxExecOutput)) {
			t.Fatalf("Exec of endless output: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("Exec waited for its deadline (%s), not for its bound", time.Since(start))
		}
	},
}

// endlessPeakBound is a generous bound on a child's peak RSS: the test
// binary, a 64 KB line or MaxExecOutput's buffer (which grows by doubling),
// against the gigabyte the host printed.
// Under the race detector its shadow memory comes on top, and how much of
// the doubling's garbage it shadows at the peak is the GC's timing: 2.4 GB
// measured on one machine, 2.9–3.6 GB on another (session 23's code and
// this one's alike). The race run reads endlessBytes' 256 MB, so it shows
// a bounded read does not crash; the plain run's gigabyte is the bound.
var endlessPeakBound = map[bool]int64{false: 3*MaxExecOutput + 200<<20, true: 16*MaxExecOutput + 200<<20}[raceDetector]

// TestEndlessLineMemoryFlat: a host printing a gigabyte without a newline,
// on a stream and through Exec, here and over sshd, costs the laptop its
// bound (peak RSS measured), and the cut is named.
func TestEndlessLineMemoryFlat(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"stream", "exec"} {
		for _, where := range []string{"local", "ssh"} {
			t.Run(name+"/"+where, func(t *testing.T) {
				if os.Getenv("SW_ENDLESS_CHILD") == name+"/"+where {
					endlessCases[name](t, childHost(t, where))
					return
				}
				peak := childPeak(t, "^TestEndlessLineMemoryFlat$/^"+name+"$/^"+where+"$", name+"/"+where)
				t.Logf("peak RSS %d MB reading %d MB", peak>>20, endlessBytes>>20)
				if peak > endlessPeakBound {
					t.Fatalf("peak RSS %d MB reading an endless line: over the bound %d MB", peak>>20, endlessPeakBound>>20)
				}
			})
		}
	}
}

func childHost(t *testing.T, where string) Host {
	if where == "local" {
		return Local{}
	}
	return dial(t, opts(t, sshdtest.Start(t)))
}

// childPeak runs the test run names in a fresh process of this test binary
// and returns that process's peak RSS (getrusage's ru_maxrss).
func childPeak(t *testing.T, run, child string) int64 {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	cmd := exec.Command(self, "-test.run", run, "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "SW_ENDLESS_CHILD="+child)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child %s: %v\n%s", child, err, out)
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
}

// TestTailJumpsPastABurst: a log that grew by more than a poll reads (a
// burst) is not crawled a MaxPerPoll at a time: the tail jumps to its
// newest bytes, says how many it skipped, and reads on from there, here and
// over sshd. Its endless last line (a burst without a newline) is cut.
func TestTailJumpsPastABurst(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "inference_all.log")
		writeFile(t, p, "start\n")
		tail := NewTail(p)
		tail.Jump = true
		if up := tail.Poll(ctx, h); up.Event != TailAttached || strings.Join(texts(up.Lines), ",") != "start" {
			t.Fatalf("attach: %+v", up)
		}
		// 64 MB of progress lines at once, then a last line
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		w := bufio.NewWriterSize(f, 1<<20)
		var burst int64
		for i := 0; burst < 64<<20; i++ {
			n, _ := fmt.Fprintf(w, "%d/10000000 (0 err) 1.1 req/s avg_comp=217tok ETA=2.4h\n", i)
			burst += int64(n)
		}
		fmt.Fprintf(w, "the newest line\n")
		must(t, w.Flush())
		must(t, f.Close())
		up := tail.Poll(ctx, h)
		if up.Err != nil || up.Skipped < burst-tail.MaxPerPoll || up.Skipped > burst {
			t.Fatalf("after a %d-byte burst: skipped %d, err %v", burst, up.Skipped, up.Err)
		}
		if len(up.Lines) == 0 || up.Lines[len(up.Lines)-1].Text != "the newest line" || up.Behind != 0 {
			t.Fatalf("the poll after the burst does not end with the newest line: %d lines, behind %d", len(up.Lines), up.Behind)
		}
		appendFile(t, p, "next\n")
		if up := tail.Poll(ctx, h); up.Skipped != 0 || strings.Join(texts(up.Lines), ",") != "next" {
			t.Fatalf("the poll after the jump: %+v", up)
		}
		// a burst without a newline: skipped, the rest of that line dropped, the next line read
		must(t, os.Truncate(p, tail.Offset()+200<<20)) // zeros: a 200 MB line, no disk
		if up := tail.Poll(ctx, h); up.Skipped < 199<<20 || len(up.Lines) != 0 {
			t.Fatalf("an endless line: skipped %d, %d lines", up.Skipped, len(up.Lines))
		}
		appendFile(t, p, "end of it\nafter\n")
		if up := tail.Poll(ctx, h); up.Skipped != 0 || strings.Join(texts(up.Lines), ",") != "after" {
			t.Fatalf("the poll after the endless line: %+v", up)
		}
	})
}

// TestTailCutsAnEndlessLine: a tail that does not jump (a file whose every
// line counts) reads a long line a poll at a time and hands on its first
// parse.DefaultMaxLine bytes, marked cut, then the lines after it.
func TestTailCutsAnEndlessLine(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		ctx := context.Background()
		p := filepath.Join(t.TempDir(), "runs.jsonl")
		writeFile(t, p, "a\n")
		must(t, os.Truncate(p, 2+8<<20))
		appendFile(t, p, "\nb\n")
		tail := NewTail(p)
		tail.StartBack = 1 << 40 // from its start
		var got []Line
		for i := 0; i < 12; i++ {
			up := tail.Poll(ctx, h)
			must(t, up.Err)
			if up.Skipped != 0 {
				t.Fatalf("a tail without Jump skipped %d", up.Skipped)
			}
			got = append(got, up.Lines...)
		}
		if len(got) != 3 || got[0].Text != "a" || !got[1].Truncated || len(got[1].Text) != 64<<10 || got[2].Text != "b" || got[2].Truncated {
			t.Fatalf("lines %d: %v", len(got), texts(got)[:min(len(got), 1)])
		}
	})
}

// TestLocalExecLeavesADetachedChild: a command that starts a child in a
// session of its own (setsid, as launch starts the worker) which keeps
// the output open is answered when the command ends, with what it said,
// not an error, and the child is not killed.
func TestLocalExecLeavesADetachedChild(t *testing.T) {
	t.Parallel()
	mark := filepath.Join(t.TempDir(), "child-ran")
	r, err := Local{}.Exec(context.Background(), "sh", "-c", "setsid sh -c 'sleep 2; touch \"$1\"' _ "+Quote(mark)+" & echo started")
	if err != nil || string(r.Stdout) != "started\n" || r.ExitCode != 0 {
		t.Fatalf("exec: %q, %d, %v", r.Stdout, r.ExitCode, err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the detached child did not run to its end")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

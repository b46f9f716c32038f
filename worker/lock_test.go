package worker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Deleting run/worker.lock while a worker holds the lock must not admit a
// second worker, and the refusal still names the holder.
func TestLockSurvivesDeletedNote(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	l, err := AcquireLock(run)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	note := filepath.Join(run, "worker.lock")
	if data, _ := os.ReadFile(note); strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("note %q", data)
	}
	if err := os.Remove(note); err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(run)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock after rm: %v", err)
	}
	if want := fmt.Sprintf("pid %d holds", os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not name the holder (%s)", err, want)
	}
	if err := l.Held(); err != nil {
		t.Errorf("Held: %v", err)
	}
	l.Release()
	l2, err := AcquireLock(run)
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	l2.Release()
}

// A note left by a dead worker is taken over.
func TestLockStaleNoteTakenOver(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(run, 0o755)
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err) // a dead pid is needed; `true` is on every machine that runs these tests
	}
	dead := cmd.ProcessState.Pid()
	os.WriteFile(filepath.Join(run, "worker.lock"), []byte(strconv.Itoa(dead)+"\n"), 0o644)
	l, err := AcquireLock(run)
	if err != nil {
		t.Fatalf("stale lock: %v", err)
	}
	defer l.Release()
	if data, _ := os.ReadFile(filepath.Join(run, "worker.lock")); strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("note not rewritten: %q", data)
	}
	if left, _ := filepath.Glob(filepath.Join(run, ".worker.lock.*")); len(left) > 0 {
		t.Errorf("temp notes left: %v", left)
	}
}

// An older binary flocks only worker.lock: a new worker must respect it.
func TestLockRespectsOldStyleLock(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(run, 0o755)
	note := filepath.Join(run, "worker.lock")
	f, err := os.OpenFile(note, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("4242\n")
	if err := flockNB(f); err != nil {
		t.Fatal(err)
	}
	_, err = AcquireLock(run)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid 4242 holds") {
		t.Fatalf("old-style holder: %v", err)
	}
}

// Held notices run/ replaced under the lock (rm -rf run; mkdir run).
func TestLockHeldNoticesReplacedDir(t *testing.T) {
	t.Parallel()
	run := filepath.Join(t.TempDir(), "run")
	l, err := AcquireLock(run)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	os.RemoveAll(run)
	os.MkdirAll(run, 0o755)
	if err := l.Held(); err == nil {
		t.Error("Held says fine after run/ was replaced")
	}
}

const lockHelperEnv = "SW_TEST_LOCK_HELPER"

// TestLockHelperProcess is a child of TestLockRace: it takes the lock,
// prints the outcome, and holds a won lock until stdin closes.
func TestLockHelperProcess(t *testing.T) {
	t.Parallel()
	run := os.Getenv(lockHelperEnv)
	if run == "" {
		t.Skip("helper process only")
	}
	l, err := AcquireLock(run)
	if err != nil {
		fmt.Printf("refused %d: %v\n", os.Getpid(), err)
		return
	}
	fmt.Printf("won %d\n", os.Getpid())
	io.Copy(io.Discard, os.Stdin)
	l.Release()
}

// Processes started together: exactly one wins, and every refusal names
// the winner's pid (never an empty pid).
func TestLockRace(t *testing.T) {
	t.Parallel()
	if os.Getenv(lockHelperEnv) != "" {
		t.Skip("the helper process of TestLockRace runs only TestLockHelperProcess")
	}
	const n = 6
	for trial := 0; trial < 2; trial++ {
		run := filepath.Join(t.TempDir(), "run")
		type child struct {
			cmd   *exec.Cmd
			stdin io.WriteCloser
			line  string
		}
		kids := make([]*child, n)
		lines := make(chan int, n)
		for i := range kids {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), lockHelperEnv+"="+run)
			in, _ := cmd.StdinPipe()
			out, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			k := &child{cmd: cmd, stdin: in}
			kids[i] = k
			go func(i int) {
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					if s := sc.Text(); strings.HasPrefix(s, "won ") || strings.HasPrefix(s, "refused ") {
						k.line = s
						break
					}
				}
				lines <- i
				io.Copy(io.Discard, out)
			}(i)
		}
		for range kids {
			<-lines
		}
		for _, k := range kids {
			k.stdin.Close()
			k.cmd.Wait()
		}
		winner := ""
		for _, k := range kids {
			if strings.HasPrefix(k.line, "won ") {
				if winner != "" {
					t.Fatalf("trial %d: two winners: %s and %s", trial, winner, k.line)
				}
				winner = strings.TrimPrefix(k.line, "won ")
			}
		}
		if winner == "" {
			t.Fatalf("trial %d: no winner: %+v", trial, kids)
		}
		for _, k := range kids {
			if strings.HasPrefix(k.line, "refused ") && !strings.Contains(k.line, "(pid "+winner+" holds") {
				t.Errorf("trial %d: refusal does not name winner %s: %s", trial, winner, k.line)
			}
		}
	}
}

// Without the kernel's table, the note is read until it names a live pid.
func TestReadPidNoteWaitsForLivePid(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "worker.lock")
	os.WriteFile(path, nil, 0o644)
	done := make(chan string)
	go func() { done <- readPidNote(path, 2e9) }()
	writeFileAtomic(path, []byte(strconv.Itoa(os.Getpid())+"\n"))
	if got := <-done; got != strconv.Itoa(os.Getpid()) {
		t.Errorf("got %q", got)
	}
	os.WriteFile(path, nil, 0o644)
	if got := readPidNote(path, 0); got != "?" {
		t.Errorf("empty note: %q", got)
	}
}

// A root reached through a symlink (/data/job -> /mnt/nvme/job) is locked
// and held as usual; a second lock through the real path is refused (the
// root's flock is on the directory, whatever the path).
func TestLockThroughSymlinkedRoot(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "job")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLock(filepath.Join(link, "run"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := l.Held(); err != nil {
		t.Fatalf("Held: %v", err)
	}
	if _, err := AcquireLock(filepath.Join(real, "run")); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock by the real path: %v", err)
	}
}

package worker

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Lock is one worker per root. It is an flock on the root directory and
// one on the <root>/run directory itself, both opened read-only. The root's
// cannot be sidestepped by `rm -rf run` or `mv run run.old` (a new run/ used
// to admit a second worker while the first still appended: integrity review
// finding 2); run/'s is what older binaries take. a directory that holds files cannot be unlinked
// from under the holder the way a lock file can (deleting run/worker.lock
// used to let a second worker in). The kernel drops the lock when the
// process dies, even by SIGKILL.
//
// run/worker.lock stays as the note of the holder's pid. It is replaced
// atomically (never seen empty), and it is flocked too, so that an older
// worker binary, which locks only that file, still sees the root as taken.
type Lock struct {
	root *os.File // the root, flocked
	dir  *os.File // run/, flocked
	note *os.File // run/worker.lock as written by us, flocked
	path string   // run/
}

// ErrLocked is returned when another worker holds the lock.
var ErrLocked = errors.New("another worker is running on this root")

// AcquireLock takes the lock or says which pid holds it.
func AcquireLock(runDir string) (*Lock, error) {
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	notePath := filepath.Join(runDir, parse.WorkerLockFile)
	root, err := flockDir(filepath.Dir(runDir), notePath)
	if err != nil {
		return nil, err
	}
	dir, err := flockDir(runDir, notePath)
	if err != nil {
		syscall.Flock(int(root.Fd()), syscall.LOCK_UN)
		root.Close()
		return nil, err
	}
	l := &Lock{root: root, dir: dir, path: runDir}
	// An older binary holds only worker.lock: respect it.
	if old, err := os.OpenFile(notePath, os.O_RDWR, 0); err == nil {
		err := syscall.Flock(int(old.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != nil {
			old.Close()
			l.Release()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w (pid %s holds %s)", ErrLocked, readPidNote(notePath, 0), notePath)
			}
			return nil, fmt.Errorf("lock %s: %w", notePath, err)
		}
		defer old.Close() // replaced below; its lock goes with the close
	}
	note, err := writePidNote(notePath)
	if err != nil {
		l.Release()
		return nil, fmt.Errorf("lock: %w", err)
	}
	l.note = note
	return l, nil
}

// flockDir opens a directory read-only and flocks it, or says who holds it.
func flockDir(path, notePath string) (*os.File, error) {
	dir, err := os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY, 0) // a root reached through a symlink is fine
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := syscall.Flock(int(dir.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer dir.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedError(dir, notePath)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return dir, nil
}

// writePidNote writes our pid into a temp file, flocks it and renames it
// over worker.lock, so the path always names a whole note.
func writePidNote(path string) (*os.File, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".worker.lock.*")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*os.File, error) {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail(err)
	}
	if _, err := tmp.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		return fail(err)
	}
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fail(err)
	}
	return tmp, nil
}

// lockedError names the holder. The kernel's lock table is the truth (it
// survives a deleted worker.lock); the note is the fallback, read until it
// names a live process for a moment, since a winner that has just taken the
// lock may not have replaced a dead holder's note yet.
func lockedError(dir *os.File, notePath string) error {
	pid := ""
	if st, err := dir.Stat(); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			pid = flockHolder(uint64(sys.Dev), sys.Ino)
		}
	}
	if pid == "" {
		pid = readPidNote(notePath, time.Second)
	}
	return fmt.Errorf("%w (pid %s holds %s)", ErrLocked, pid, filepath.Dir(notePath))
}

// readPidNote reads worker.lock, retrying for up to wait while it does not
// name a live process. It returns "?" when it never does.
func readPidNote(path string, wait time.Duration) string {
	deadline := time.Now().Add(wait)
	last := ""
	for {
		data, _ := os.ReadFile(path)
		s := strings.TrimSpace(string(data))
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			last = s
			if pidAlive(n) {
				return s
			}
		}
		if !time.Now().Before(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last == "" {
		return "?"
	}
	return last
}

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// flockHolder finds the pid holding an flock on (dev, ino) in /proc/locks
// ("1: FLOCK  ADVISORY  WRITE 4242 08:01:1234 0 EOF"; major and minor in
// hex). "" when the table is not there or does not list it.
func flockHolder(dev, ino uint64) string {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return ""
	}
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, ino)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// id, FLOCK, ADVISORY, WRITE, pid, dev:ino, start, end; "->" marks a waiter
		if len(f) < 6 || f[1] != "FLOCK" {
			continue
		}
		if f[5] == want {
			return f[4]
		}
	}
	return ""
}

// Held reports whether run/ still names the directory this lock holds (by
// device and inode). It fails after `rm -rf run` or `mv run run.old`: the
// worker checks it before every append and stops at once when it fails
// (ErrLockLost), so no record lands once its claim is in doubt.
func (l *Lock) Held() error {
	if l == nil || l.dir == nil {
		return errors.New("lock released")
	}
	a, err := l.dir.Stat()
	if err != nil {
		return fmt.Errorf("lock: %v (%w)", err, ErrLockLost)
	}
	b, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("lock: %s is gone: %v (%w)", l.path, err, ErrLockLost)
	}
	if !os.SameFile(a, b) {
		return fmt.Errorf("lock: %s was replaced while this worker held it (%w)", l.path, ErrLockLost)
	}
	return nil
}

// ErrLockLost is the error of a lock whose run/ is gone or replaced.
var ErrLockLost = errors.New("the worker stopped at once: another worker may own the root now")

// Release drops the lock.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	if l.note != nil {
		_ = syscall.Flock(int(l.note.Fd()), syscall.LOCK_UN)
		l.note.Close()
		l.note = nil
	}
	for _, f := range []**os.File{&l.dir, &l.root} {
		if *f != nil {
			_ = syscall.Flock(int((*f).Fd()), syscall.LOCK_UN)
			(*f).Close()
			*f = nil
		}
	}
}

// writeFileAtomic replaces path with data: temp file, fsync, rename.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func flockNB(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

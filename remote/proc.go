package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// Linker is a Host that reads symlinks and resolves paths without exec:
// enough to read /proc/PID/cwd and to compare two spellings of a root.
// SSH (through SFTP) and Local are Linkers.
type Linker interface {
	// ReadLink is readlink(2): /proc/PID/cwd, /proc/PID/fd/N.
	ReadLink(ctx context.Context, path string) (string, error)
	// RealPath is realpath(3): absolute, symlinks resolved.
	RealPath(ctx context.Context, path string) (string, error)
}

func (s *SSH) ReadLink(ctx context.Context, p string) (string, error) {
	sess, err := s.session()
	if err != nil {
		return "", err
	}
	if sess.noSFTP() {
		return s.shReadLink(ctx, p)
	}
	t, err := withTimeout(ctx, opTimeout(ctx), func() (string, error) {
		sc, err := sess.fs()
		if err != nil {
			return "", err
		}
		return sc.ReadLink(p)
	})
	if err != nil {
		return "", mapNotExist(err)
	}
	s.contact()
	return t, nil
}

func (s *SSH) RealPath(ctx context.Context, p string) (string, error) {
	sess, err := s.session()
	if err != nil {
		return "", err
	}
	if sess.noSFTP() {
		return s.shRealPath(ctx, p)
	}
	t, err := withTimeout(ctx, opTimeout(ctx), func() (string, error) {
		sc, err := sess.fs()
		if err != nil {
			return "", err
		}
		return sc.RealPath(p)
	})
	if err != nil {
		return "", mapNotExist(err)
	}
	s.contact()
	return t, nil
}

func (Local) ReadLink(_ context.Context, p string) (string, error) { return os.Readlink(p) }

func (Local) RealPath(_ context.Context, p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	return filepath.Abs(r)
}

// Holder is a file descriptor, found in /proc, whose target matched.
type Holder struct {
	PID, FD int
	Flags   int    // the open flags from /proc/PID/fdinfo/FD (octal there)
	Target  string // the fd's symlink target: the file's real path
}

// Writes says whether the descriptor was opened for writing.
func (h Holder) Writes() bool { return h.Flags&3 != 0 } // O_WRONLY | O_RDWR

// holdersScript lists every /proc/PID/fd/N whose target matches one of
// the -lname patterns given as arguments, with its open flags
// (host/holders.sh). One exec: the scan is done on the host, so what
// comes back is a line per match.
var holdersScript = HostScript("holders.sh")

// HoldersArgv is the exact command FindHolders runs. Patterns are find
// -lname patterns (fnmatch; escape literal * ? [ \ with GlobEscape).
func HoldersArgv(patterns []string) []string {
	argv := []string{"sh", "-c", holdersScript, "synthwatch-holders"}
	for i, p := range patterns {
		if i > 0 {
			argv = append(argv, "-o")
		}
		argv = append(argv, "-lname", p)
	}
	return argv
}

// FindHolders scans the host's process table for descriptors open on
// files matching the patterns. It is one exec (about half a second on a
// busy sshd), so callers keep it for when they have no better witness.
// Processes of other users are invisible unless we are root.
//
// scan is a batch's scan (Batch.Procs): its answer stands when it scanned
// for these patterns (the batch's were written before the poll knew the
// root's real path, or the worker log's); otherwise, or unanswered, the
// scan is an exec of its own.
func FindHolders(ctx context.Context, h Host, patterns []string, scan *ExecAsk) ([]Holder, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	argv := HoldersArgv(patterns)
	r, ok := scan.Result()
	if !ok || !slices.Equal(scan.Argv(), argv) {
		var err error
		if r, err = h.Exec(ctx, argv...); err != nil {
			return nil, err
		}
	}
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("scan /proc: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	}
	return parseHolders(r.Stdout), nil
}

func parseHolders(out []byte) []Holder {
	var hs []Holder
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) != 4 {
			continue
		}
		pid, e1 := strconv.Atoi(f[0])
		fd, e2 := strconv.Atoi(f[1])
		fl, e3 := strconv.ParseInt(f[2], 8, 64)
		if e1 != nil || e2 != nil || e3 != nil || pid <= 0 {
			continue
		}
		hs = append(hs, Holder{PID: pid, FD: fd, Flags: int(fl), Target: f[3]})
	}
	return hs
}

// GlobEscape makes s match itself in a glob or fnmatch pattern.
func GlobEscape(s string) string { return parse.GlobEscape(s) }

// ProcStat is what /proc/PID/stat says that a watcher needs.
type ProcStat struct {
	State     byte   // R, S, D, Z, T, ...
	PPID      int    // parent
	StartTime uint64 // clock ticks after boot: with the pid, names one process for good
}

// ParseProcStat reads /proc/PID/stat ("pid (comm) S ppid ... starttime ...").
// The comm may hold spaces and parentheses, so fields count from the last ')'.
func ParseProcStat(b []byte) (ProcStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, errors.New("/proc stat: no comm")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return ProcStat{}, errors.New("/proc stat: short")
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return ProcStat{}, fmt.Errorf("/proc stat ppid: %w", err)
	}
	st, err := strconv.ParseUint(f[19], 10, 64) // field 22 of stat(5); f[0] is field 3
	if err != nil {
		return ProcStat{}, fmt.Errorf("/proc stat starttime: %w", err)
	}
	return ProcStat{State: f[0][0], PPID: ppid, StartTime: st}, nil
}

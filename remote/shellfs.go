package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// The file reads of a host with no SFTP server (Dropbear's often have
// none): each through a small command of its shell. The polls do not need
// them (the batch and the agent read through exec); the actions and the
// plain reads of a poll whose batch failed do.

// errNoSFTP marks a session whose host refused the SFTP subsystem.
var errNoSFTP = errors.New("the host has no SFTP server; reads go through its shell")

// What the scripts below exit with for a missing path, and for one that is
// no regular file (its kind on stdout).
const (
	exitMissing    = 44
	exitNotRegular = 45
)

// shell runs one of the scripts below with args; a missing path (exit 44)
// is fs.ErrNotExist, any other failure its stderr.
func (s *SSH) shell(ctx context.Context, script string, args ...string) ([]byte, error) {
	r, err := s.run(ctx, nil, append([]string{"sh", "-c", script, "synthwatch-fs"}, args...))
	switch {
	case err != nil:
		return nil, err
	case r.ExitCode == exitMissing:
		return nil, fmt.Errorf("%w: %s", os.ErrNotExist, args[0])
	case r.ExitCode == exitNotRegular:
		return nil, &fs.PathError{Op: "read", Path: args[0], Err: fmt.Errorf("%w (a %s)", ErrNotRegular, strings.TrimSpace(string(r.Stdout)))}
	case r.ExitCode != 0:
		return nil, fmt.Errorf("%s: %s (exit %d)", args[0], strings.TrimSpace(string(r.Stderr)), r.ExitCode)
	}
	return r.Stdout, nil
}

func (s *SSH) shStat(ctx context.Context, p string) (FileInfo, error) {
	out, err := s.shell(ctx, `[ -e "$1" ] || exit 44; stat -L -c '%s %Y %f' -- "$1"`, p)
	if err != nil {
		return FileInfo{}, err
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return FileInfo{}, fmt.Errorf("stat %s: %q", p, out)
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	mtime, err2 := strconv.ParseInt(f[1], 10, 64)
	mode, err3 := strconv.ParseUint(f[2], 16, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		return FileInfo{}, fmt.Errorf("stat %s: %q", p, out)
	}
	return FileInfo{Name: path.Base(p), Size: size, ModTime: time.Unix(mtime, 0), IsDir: mode&0o170000 == 0o040000, Mode: modeType(mode)}, nil
}

// modeType is the fs.ModeType bits of stat's %f (st_mode).
func modeType(m uint64) fs.FileMode {
	switch m & 0o170000 {
	case 0o100000:
		return 0
	case 0o040000:
		return fs.ModeDir
	case 0o010000:
		return fs.ModeNamedPipe
	case 0o140000:
		return fs.ModeSocket
	case 0o020000:
		return fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		return fs.ModeDevice
	case 0o120000:
		return fs.ModeSymlink
	}
	return fs.ModeIrregular
}

// readAtScript reads a byte range, never opening a FIFO (host/readat.sh).
var readAtScript = HostScript("readat.sh")

func (s *SSH) shReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	return s.shell(ctx, readAtScript, p, strconv.FormatInt(off+1, 10), strconv.Itoa(n))
}

func (s *SSH) shGlob(ctx context.Context, pattern string) ([]string, error) {
	// IFS empty: the pattern is globbed, never split
	out, err := s.shell(ctx, `IFS=; for f in $1; do [ -e "$f" ] || [ -L "$f" ] && printf '%s\0' "$f"; done; :`, pattern)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range bytes.Split(out, []byte{0}) {
		if len(n) > 0 {
			names = append(names, string(n))
		}
	}
	return names, nil
}

func (s *SSH) shReadLink(ctx context.Context, p string) (string, error) {
	out, err := s.shell(ctx, `[ -L "$1" ] || exit 44; readlink -- "$1"`, p)
	return strings.TrimSuffix(string(out), "\n"), err
}

func (s *SSH) shRealPath(ctx context.Context, p string) (string, error) {
	out, err := s.shell(ctx, `[ -e "$1" ] || exit 44; readlink -f -- "$1"`, p)
	return strings.TrimSuffix(string(out), "\n"), err
}

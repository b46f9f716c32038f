package remote

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/pkg/sftp"
)

// ErrNotRegular: a file the poll reads is a FIFO, a device, a socket or a
// directory. Opening a FIFO for reading blocks until a writer comes, which
// on a host may be never: every read of a file whose kind is not known
// checks it first.
var ErrNotRegular = errors.New("not a regular file")

// notRegular is PATH's ErrNotRegular, saying what it is instead.
func notRegular(p string, m fs.FileMode) error {
	kind := "special file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		kind = "FIFO"
	case m.IsDir():
		kind = "directory"
	case m&fs.ModeSocket != 0:
		kind = "socket"
	case m&fs.ModeDevice != 0:
		kind = "device"
	}
	return &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("%w (a %s)", ErrNotRegular, kind)}
}

// openRegular opens p for reading without blocking on what it is (a FIFO
// opened with O_NONBLOCK returns at once) and refuses anything but a
// regular file, checked on the descriptor itself (no race with a rename).
// It follows symlinks, as the shell's test -f and stat -L do: a root may
// link its logs elsewhere.
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, notRegular(p, fi.Mode())
	}
	return f, nil
}

// openRegularSFTP opens p over SFTP only when it is a regular file: the
// host's sftp-server opens without O_NONBLOCK, so a FIFO would hold its
// request, and the server, for good. (A file swapped for a FIFO between
// the stat and the open is the one case left; the op's timeout bounds it.)
func openRegularSFTP(c *sftp.Client, p string) (*sftp.File, error) {
	fi, err := c.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(p, fi.Mode())
	}
	return c.Open(p)
}

// IsFileError says whether err is the host's answer about a file (it is
// not there, not readable, not a regular file), not the link's failure:
// such a file is a warning in the views, never a link down.
func IsFileError(err error) bool {
	var he *hostError
	var pe *fs.PathError
	var se *sftp.StatusError
	return errors.As(err, &he) || errors.As(err, &pe) || errors.As(err, &se) || errors.Is(err, ErrNotRegular)
}

// FileErrText is "PATH: why", with the path once: the host's errors name
// it, an SFTP status does not.
func FileErrText(p string, err error) string {
	t := err.Error()
	if strings.Contains(t, p) {
		return t
	}
	return p + ": " + t
}

package remote

import (
	"errors"
	"io/fs"
	"os"
	"strings"

	"github.com/pkg/sftp"
	"github.com/synthwatch/synthwatch/parse"
)

// ErrNotRegular: a file to read is no regular file (parse.ErrNotRegular).
var ErrNotRegular = parse.ErrNotRegular

func notRegular(p string, m fs.FileMode) error { return parse.NotRegular(p, m) }

// openRegular is parse.OpenRegular: no read waits on a FIFO.
func openRegular(p string) (*os.File, error) { return parse.OpenRegular(p) }

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

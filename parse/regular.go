package parse

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular: a file to read is a FIFO, a device, a socket or a
// directory. Opening a FIFO for reading blocks until a writer comes, which
// on a host may be never: every read of a file whose kind is not known
// checks it first.
var ErrNotRegular = errors.New("not a regular file")

// NotRegular is p's ErrNotRegular, saying what it is instead.
func NotRegular(p string, m fs.FileMode) error { return notRegular("read", p, m) }

func notRegular(op, p string, m fs.FileMode) error {
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
	return &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("%w (a %s)", ErrNotRegular, kind)}
}

// OpenRegular opens p for reading without blocking on what it is (a FIFO
// opened with O_NONBLOCK returns at once) and refuses anything but a
// regular file, checked on the descriptor itself (no race with a rename).
// It follows symlinks, as the shell's test -f and stat -L do: a root may
// link its files elsewhere.
func OpenRegular(p string) (*os.File, error) { return OpenRegularFile(p, os.O_RDONLY, 0) }

// OpenRegularFile is OpenRegular with os.OpenFile's flag and perm, for a
// writer too (the worker's output files; add O_NOFOLLOW not to follow).
// A FIFO with no reader fails a non-blocking open to write (ENXIO): it is
// refused as a FIFO too. O_NONBLOCK stays: a regular file's reads and
// writes never block.
func OpenRegularFile(p string, flag int, perm os.FileMode) (*os.File, error) {
	op := "read"
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		op = "open"
	}
	f, err := os.OpenFile(p, flag|syscall.O_NONBLOCK, perm)
	if errors.Is(err, syscall.ENXIO) {
		return nil, notRegular(op, p, fs.ModeNamedPipe)
	}
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
		return nil, notRegular(op, p, fi.Mode())
	}
	return f, nil
}

// ReadRegular is os.ReadFile through OpenRegular.
func ReadRegular(p string) ([]byte, error) {
	f, err := OpenRegular(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

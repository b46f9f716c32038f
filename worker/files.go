package worker

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/synthwatch/synthwatch/parse"
)

// Every file the worker opens is opened without blocking and checked to be
// a regular file before it is read or written (parse.OpenRegularFile): a
// FIFO planted where raw_responses.jsonl or pipeline.toml should be used to
// hang the worker in open(2), deaf to SIGTERM (integrity review finding 1).
// Output files are opened with O_NOFOLLOW too: a symlink planted at
// errors.jsonl made the worker truncate and append to a file outside the
// root (finding 7).

// openInput opens path for reading; a symlink to a regular file is fine
// (prompts kept elsewhere), anything else that is not a regular file is not.
func openInput(path string) (*os.File, error) { return parse.OpenRegular(path) }

// openOutput opens path to write (flag as os.OpenFile's), never through a
// symlink.
func openOutput(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := parse.OpenRegularFile(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: the worker writes its output files only in place (remove the link): %w", path, parse.ErrNotRegular)
	}
	return f, err
}

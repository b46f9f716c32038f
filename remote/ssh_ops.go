package remote

// The Host methods of an SSH link: reads over its SFTP session, execs
// through the one door (frame.go), forwards and writes.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pkg/sftp"
)

// withTimeout runs f but returns at ctx's end or after d; f's goroutine ends
// when its request completes or the link is closed.
func withTimeout[T any](ctx context.Context, d time.Duration, f func() (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func opTimeout(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		return time.Until(dl)
	}
	return DefaultOpTimeout
}

func (s *SSH) Stat(ctx context.Context, p string) (FileInfo, error) {
	sess, err := s.session()
	if err != nil {
		return FileInfo{}, err
	}
	if sess.noSFTP() {
		return s.shStat(ctx, p)
	}
	fi, err := withTimeout(ctx, opTimeout(ctx), func() (os.FileInfo, error) {
		sc, err := sess.fs()
		if err != nil {
			return nil, err
		}
		return sc.Stat(p)
	})
	if err != nil {
		return FileInfo{}, mapNotExist(err)
	}
	s.contact()
	return FileInfo{Name: fi.Name(), Size: fi.Size(), ModTime: fi.ModTime(), IsDir: fi.IsDir(), Mode: fi.Mode().Type()}, nil
}

func (s *SSH) ReadAt(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if sess, err := s.session(); err == nil && sess.noSFTP() {
		return s.shReadAt(ctx, p, off, n)
	}
	return s.readFile(ctx, off, n, func(sess *session) (*sftp.File, func(error), error) {
		sc, err := sess.fs()
		if err != nil {
			return nil, nil, err
		}
		f, err := openRegularSFTP(sc, p)
		if err != nil {
			return nil, nil, err
		}
		return f, func(error) { go f.Close() }, nil // the close needs no answer before we go on
	})
}

// readBufs holds read buffers: a read ahead asks for more than it usually
// gets, and only what came back should be allocated per poll.
// Only reads up to maxPooledRead use them: a big read (a prompts file
// counted once) must not stay in the pool.
var readBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledRead = 256 << 10

// readFile reads up to n bytes at off from the file open gives; release
// runs after the read with its error.
func (s *SSH) readFile(ctx context.Context, off int64, n int, open func(*session) (*sftp.File, func(error), error)) ([]byte, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	data, err := withTimeout(ctx, opTimeout(ctx), func() ([]byte, error) {
		f, release, err := open(sess)
		if err != nil {
			return nil, err
		}
		var buf []byte
		pooled := n <= maxPooledRead
		if pooled {
			bp := readBufs.Get().(*[]byte)
			defer readBufs.Put(bp)
			if cap(*bp) < n {
				*bp = make([]byte, (n+aheadMin-1)/aheadMin*aheadMin)
			}
			buf = (*bp)[:n]
		} else {
			buf = make([]byte, n)
		}
		m, err := f.ReadAt(buf, off)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		release(err)
		if err != nil {
			return nil, err
		}
		if pooled {
			return bytes.Clone(buf[:m]), nil
		}
		return buf[:m], nil
	})
	if err != nil {
		return nil, mapNotExist(err)
	}
	s.contact()
	return data, nil
}

func (s *SSH) Glob(ctx context.Context, pattern string) ([]string, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	if sess.noSFTP() {
		return s.shGlob(ctx, pattern)
	}
	return withTimeout(ctx, opTimeout(ctx), func() ([]string, error) {
		sc, err := sess.fs()
		if err != nil {
			return nil, err
		}
		return sc.Glob(pattern)
	})
}

func (s *SSH) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	return s.run(ctx, nil, argv)
}

// ExecInput is Exec with stdin read from in.
func (s *SSH) ExecInput(ctx context.Context, in io.Reader, argv ...string) (ExecResult, error) {
	return s.run(ctx, in, argv)
}

// run is Exec with what the command reads on stdin: framed (framedArgv),
// so what the login shell printed before the command is not its output.
func (s *SSH) run(ctx context.Context, stdin io.Reader, argv []string) (ExecResult, error) {
	mark := execMark()
	csh := s.csh.Load()
	res, err := s.runRaw(ctx, stdin, argv, framedArgv(mark, argv))
	if err == nil && !csh && stdin == nil && hasNewline(argv) && CshSaid(res.Stderr) && !bytes.Contains(res.Stdout, []byte("\n"+mark+"\n")) {
		// a csh login cut the line at a newline: sh never ran (no mark;
		// csh may have taken the lines after it for commands of its own,
		// which fail on sh's words). The same command again, with no
		// newline on its line, as every command after it
		s.NoteLoginCsh()
		res, err = s.runRaw(ctx, stdin, argv, framedArgv(mark, argv))
	}
	res.Stdout, res.Stderr = afterMark(res.Stdout, mark), afterMark(res.Stderr, mark)
	return res, err
}

// hasNewline says whether one of argv's words holds a newline.
func hasNewline(argv []string) bool {
	for _, a := range argv {
		if strings.Contains(a, "\n") {
			return true
		}
	}
	return false
}

// runRaw runs wire, the line that carries argv.
func (s *SSH) runRaw(ctx context.Context, stdin io.Reader, argv, wire []string) (ExecResult, error) {
	sess, err := s.session()
	if err != nil {
		return ExecResult{}, err
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	if err := sess.beforeExec(ctx); err != nil {
		return ExecResult{}, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	csh := s.csh.Load()
	ch, err := withTimeout(ctx, opTimeout(ctx), func() (*execChan, error) { return startExec(sess.link.client, wire, stdin != nil, csh) })
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	defer ch.ch.Close()
	out, errb := newCapBuffer(MaxExecOutput), newCapBuffer(maxExecStderr)
	copied := ch.copyOut(out, errb)
	go func() { // stdin ends after what WireCommand put there, and stdin
		if stdin != nil {
			_, _ = io.Copy(ch.ch, stdin)
		}
		_ = ch.ch.CloseWrite()
	}()
	waited := make(chan error, 1)
	go func() { err := <-ch.status; copied.Wait(); waited <- err }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		ch.kill() // leave nothing running on the host
		ch.ch.Close()
		return ExecResult{}, fmt.Errorf("exec %s: %w", argv[0], ctx.Err())
	case <-out.over:
		ch.kill() // an answer past the bound is not one: end it rather than drain it
		ch.ch.Close()
	}
	s.contact()
	res, cutErr := captured(argv[0], out, errb) // past the bound, or it ended just as it went past
	if cutErr != nil {
		return res, cutErr
	}
	var ee *exitError
	if errors.As(err, &ee) {
		res.ExitCode = ee.code
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("exec %s: %w", argv[0], err)
	}
	return res, nil
}

func (s *SSH) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	sess, err := s.session()
	if err != nil {
		return nil, err
	}
	ctx, cancel := withDeadline(ctx)
	defer cancel()
	return sess.link.client.DialContext(ctx, "tcp", addr)
}

func (s *SSH) WriteFile(ctx context.Context, p string, data []byte, mode uint32) error {
	sess, err := s.session()
	if err != nil {
		return err
	}
	if sess.noSFTP() {
		return s.writeByExec(ctx, p, data, mode)
	}
	_, err = withTimeout(ctx, opTimeout(ctx), func() (struct{}, error) {
		sc, err := sess.fs()
		if err != nil {
			return struct{}{}, err
		}
		tmp := path.Join(path.Dir(p), fmt.Sprintf(".%s.tmp-%d", path.Base(p), rand.Int64()))
		f, err := sc.Create(tmp)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := f.Write(data); err != nil {
			f.Close()
			sc.Remove(tmp)
			return struct{}{}, err
		}
		if err := f.Close(); err != nil {
			sc.Remove(tmp)
			return struct{}{}, err
		}
		if err := sc.Chmod(tmp, os.FileMode(mode)); err != nil {
			sc.Remove(tmp)
			return struct{}{}, err
		}
		if err := sc.PosixRename(tmp, p); err != nil {
			sc.Remove(tmp)
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	return err
}

// writeByExec is WriteFile through a shell: data on stdin to a temp file
// beside p, its mode set, renamed over p, as the SFTP way does.
func (s *SSH) writeByExec(ctx context.Context, p string, data []byte, mode uint32) error {
	r, err := s.run(ctx, bytes.NewReader(data), []string{"sh", "-c", `t="$(dirname -- "$1")/.$(basename -- "$1").tmp-$$" && cat > "$t" && chmod "$2" "$t" && mv -f "$t" "$1" || { rm -f "$t"; exit 1; }`,
		"synthwatch-write", p, strconv.FormatUint(uint64(mode), 8)})
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("write %s: %s", p, bytes.TrimSpace(r.Stderr))
	}
	return err
}

// mapNotExist makes SFTP's "no such file" match fs.ErrNotExist.
func mapNotExist(err error) error {
	var se *sftp.StatusError
	if errors.As(err, &se) && se.FxCode() == sftp.ErrSSHFxNoSuchFile {
		return fmt.Errorf("%w: %v", os.ErrNotExist, err)
	}
	return err
}

package remote

import (
	"context"
	"errors"
	"sync"

	"github.com/pkg/sftp"
)

// Keeper is a Host that can keep followed files open between polls, so a
// read of a file already open costs one round trip instead of two (open,
// then read). A kept handle follows the inode, not the path: the Poller
// checks what it reads against a stat of the path and forgets a handle
// that no longer matches.
type Keeper interface {
	// ReadKept is ReadAt through a handle kept from an earlier call.
	ReadKept(ctx context.Context, path string, off int64, n int) ([]byte, error)
	// Forget closes the kept handle of path, if any.
	Forget(path string)
}

// maxKept bounds the handles open on the host; a pipeline root follows a
// dozen files or so.
const maxKept = 64

// kept holds a session's open files. They die with the session: a new
// link starts with none.
type kept struct {
	mu    sync.Mutex
	files map[string]*keptFile
}

type keptFile struct {
	once sync.Once
	f    *sftp.File
	err  error
}

// get returns path's handle, opening it once even when many reads ask at
// the same time.
func (k *kept) get(c *sftp.Client, path string) (*keptFile, error) {
	k.mu.Lock()
	if k.files == nil {
		k.files = map[string]*keptFile{}
	}
	kf := k.files[path]
	if kf == nil {
		if len(k.files) >= maxKept {
			for p, old := range k.files { // any one: the set is small and stable
				delete(k.files, p)
				go old.close()
				break
			}
		}
		kf = &keptFile{}
		k.files[path] = kf
	}
	k.mu.Unlock()
	kf.once.Do(func() { kf.f, kf.err = openRegularSFTP(c, path) })
	if kf.err != nil {
		k.drop(path, kf)
		return nil, kf.err
	}
	return kf, nil
}

// drop forgets path's handle if it is still kf (nil: whatever it is).
func (k *kept) drop(path string, kf *keptFile) {
	k.mu.Lock()
	cur := k.files[path]
	if cur != nil && (kf == nil || cur == kf) {
		delete(k.files, path)
	} else {
		cur = nil
	}
	k.mu.Unlock()
	if cur != nil {
		go cur.close() // the close needs no answer before we go on
	}
}

func (kf *keptFile) close() {
	kf.once.Do(func() { kf.err = errors.New("closed") }) // an open still running owns its file
	if kf.f != nil {
		kf.f.Close()
	}
}

// ReadKept reads through a kept handle; a failed read forgets it, so the
// next one opens the path again.
func (s *SSH) ReadKept(ctx context.Context, p string, off int64, n int) ([]byte, error) {
	if sess, err := s.session(); err == nil && sess.noSFTP() {
		return s.shReadAt(ctx, p, off, n)
	}
	return s.readFile(ctx, off, n, func(sess *session) (*sftp.File, func(error), error) {
		sc, err := sess.fs()
		if err != nil {
			return nil, nil, err
		}
		kf, err := sess.kept.get(sc, p)
		if err != nil {
			return nil, nil, err
		}
		return kf.f, func(err error) {
			if err != nil {
				sess.kept.drop(p, kf)
			}
		}, nil
	})
}

// Forget closes p's kept handle.
func (s *SSH) Forget(p string) {
	if sess, err := s.session(); err == nil {
		sess.kept.drop(p, nil)
	}
}

package parse

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"syscall"
)

// A file that decides where a secret goes or what runs (pipeline.toml's
// server, servers and api_key_file; config.toml's worker_bin, server_url
// and notify command) is obeyed only when the running user trusts it, as
// ssh's StrictModes and git's safe.directory have it: the user (or root)
// owns it and nobody else can write it. A team's group-writable root lets
// another account write pipeline.toml; its other keys (categories,
// classes) are still read.

// UntrustedError is a file the running user may not obey: who owns it,
// its mode and what is wrong with that.
type UntrustedError struct {
	Path  string
	Owner string // a name, else "uid N"
	Mode  fs.FileMode
	Why   string // "not yours (alice)", "writable by others"
	Fix   string // what makes it trusted (a caller may add what else does)
}

func (e *UntrustedError) Error() string {
	return fmt.Sprintf("%s (owner %s, mode %04o) is %s; fix: %s", e.Path, e.Owner, e.Mode.Perm(), e.Why, e.Fix)
}

// ReadTrusted reads p as ReadRegular does and tells whether the running
// user may obey it (untrusted is nil) or why not, judged on the descriptor
// read (no race with a rename).
func ReadTrusted(p string) (data []byte, untrusted error, err error) {
	return readJudged(p, 0o022, "writable by")
}

// ReadSecret reads a secret (an API key) from p: the user must own it and
// nobody else may read or write it, as ssh asks of a private key. A secret
// another user can read is not secret; one another user wrote is theirs.
func ReadSecret(p string) ([]byte, error) {
	data, untrusted, err := readJudged(p, 0o077, "readable or writable by")
	if err == nil {
		err = untrusted
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}

func readJudged(p string, others fs.FileMode, verb string) (data []byte, untrusted error, err error) {
	f, err := OpenRegular(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if data, err = io.ReadAll(f); err != nil {
		return nil, nil, err
	}
	return data, judgeTrust(p, fi, others, verb), nil
}

// judgeTrust is nil when fi is the running user's (or root's, except for
// a secret) and its mode has none of the bits in others.
func judgeTrust(p string, fi fs.FileInfo, others fs.FileMode, verb string) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil // no owner to judge (not a Unix file system)
	}
	me := uint32(os.Geteuid())
	return JudgeOwner(p, st.Uid, userName(st.Uid), me, userName(me), fi.Mode(), others, verb)
}

// JudgeOwner is the rule on a file's owner and mode however they were
// learnt (here by fstat, on a host by its stat): nil when it is me's (or
// root's, but for a secret, whose others are 0o077) and its mode has none
// of the bits in others; else an *UntrustedError. verb names those bits
// ("writable by").
func JudgeOwner(p string, uid uint32, owner string, me uint32, meName string, mode fs.FileMode, others fs.FileMode, verb string) error {
	e := &UntrustedError{Path: p, Owner: owner, Mode: mode}
	rootOK := others == 0o022 // root's config is trusted; a secret must be the user's own
	switch {
	case uid != me && !(rootOK && uid == 0):
		e.Why = "not yours (" + meName + ")"
		e.Fix = "if you trust it, copy it to a file of yours and move that over it"
	case mode.Perm()&others != 0:
		e.Why = verb + " others"
		e.Fix = fmt.Sprintf("chmod go-%s %s", map[bool]string{true: "rw", false: "w"}[others == 0o077], p)
	default:
		return nil
	}
	return e
}

func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(id); err == nil {
		return u.Username
	}
	return "uid " + id
}

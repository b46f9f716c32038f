package counts

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// manifestTrustArgv is manifestTrust's exec of p; the batch that reads the
// manifest runs it beside the read (batchFor), so the check costs no round
// trip after the answer.
func manifestTrustArgv(p string) []string {
	return remote.OwnerArgv(p) // the session user's uid and name, the file's owner, its name and mode
}

// manifestTrust says why the host's pipeline.toml at p may not say where
// the dashboard's probes go and which logs it reads (servers, server), as
// the worker refuses it for where its requests go: the file is another
// account's, or others can write it (parse.JudgeOwner). nil when it may,
// or when the host cannot tell (no GNU or BusyBox stat). The poll's
// batch's answer (ask), or, when it did not answer, an exec of its own,
// asked only of a manifest that names a server, once per parse.
func manifestTrust(ctx context.Context, h remote.Host, p string, ask *remote.ExecAsk) error {
	r, ok := ask.Result()
	if !ok {
		var err error
		if r, err = h.Exec(ctx, manifestTrustArgv(p)...); err != nil {
			return nil
		}
	}
	if r.ExitCode != 0 {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if len(lines) < 3 { // a login banner may come first: the answer is the last three lines
		return nil
	}
	lines = lines[len(lines)-3:]
	f := strings.Fields(lines[2])
	me, err1 := strconv.ParseUint(strings.TrimSpace(lines[0]), 10, 32)
	if len(f) != 3 || err1 != nil {
		return nil
	}
	uid, err2 := strconv.ParseUint(f[0], 10, 32)
	mode, err3 := strconv.ParseUint(f[2], 8, 32)
	if err2 != nil || err3 != nil {
		return nil
	}
	return parse.JudgeOwner(p, uint32(uid), named(f[1], uid), uint32(me), named(strings.TrimSpace(lines[1]), me), fs.FileMode(mode), 0o022, "writable by")
}

// named is an account's name as stat gave it, or "uid N" where it had none
// (stat's %U says UNKNOWN: a container's uid with no passwd line).
func named(name string, uid uint64) string {
	if name == "UNKNOWN" || name == "" {
		return "uid " + strconv.FormatUint(uid, 10)
	}
	return name
}

// distrust drops m's servers when another account can change the file
// (manifestTrust), and says so: every view shows it as the manifest's
// error, status exits 1 on it; the categories are still read from it.
func (k *Set) distrust(ctx context.Context, h remote.Host, p string, m *parse.Manifest, ask *remote.ExecAsk) error {
	why := manifestTrust(ctx, h, p, ask)
	if why == nil {
		return nil
	}
	m.Server, m.Servers = "", nil
	return fmt.Errorf("%s: refusing its server and servers (where the probes go, which logs are read): %w", p, why)
}

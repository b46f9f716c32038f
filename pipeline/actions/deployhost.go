package actions

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// What the host makes of a deploy: which binary it will run for
// `synthwatch`, and why a directory could not take the binary. Deploy
// (deploy.go) and the deploy command each call these with one line.

// shadowScript prints what a launch without --worker-bin runs, what the
// user's login shell runs by hand, and the deployed file, each with the
// file it resolves to (remote/host/shadow.sh).
var shadowScript = remote.HostScript("shadow.sh")

// Shadowed says which other binary the host runs for `synthwatch` instead
// of dest, the file deploy just wrote ("" when none does). With
// --worker-bin (workerBin) the launch runs that file; the login shell's
// PATH may still name another one, which the user runs by hand.
func (a Actor) Shadowed(ctx context.Context, dest string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // a login shell's rc may hang
	defer cancel()
	r, err := a.H.Exec(ctx, "sh", "-c", shadowScript, "synthwatch-deploy", dest)
	if err != nil {
		return ""
	}
	got := map[string][2]string{}
	for _, l := range strings.Split(string(r.Stdout), "\n") {
		if f := strings.Split(l, "\t"); len(f) >= 2 && strings.HasPrefix(f[0], "@") {
			got[f[0]] = [2]string{f[1], f[len(f)-1]}
		}
	}
	real := got["@dest"][1]
	if real == "" {
		return ""
	}
	var say []string
	if e := got["@exec"]; a.WorkerBin == "" && e[1] != "" && e[1] != real {
		say = append(say, fmt.Sprintf("launch, the agent and report run %s (first on the PATH of an SSH command)", e[0]))
	}
	if l := got["@login"]; l[1] != "" && l[1] != real {
		say = append(say, fmt.Sprintf("your login shell runs %s", l[0]))
	}
	if len(say) == 0 {
		return ""
	}
	return parse.SanitizeString(fmt.Sprintf("warning: on the host, `synthwatch` is not the file just deployed (%s): %s. Remove the other one, put %s first on PATH, or pass --worker-bin %s (worker_bin in config.toml)",
		dest, strings.Join(say, "; "), path.Dir(dest), dest))
}

// WhyNotWritten turns a failed write of size bytes under dir into an
// error that says why: a full disk, a read-only file system, a directory
// the user may not write (an unwritable or missing HOME), in place of an
// SFTP "Failure" or a mkdir's bare exit. err (wrapped) and stderr stay as
// the detail.
func (a Actor) WhyNotWritten(ctx context.Context, what, dir string, size int64, err error, stderr []byte) error {
	if err == nil {
		lines := strings.Split(strings.TrimSpace(string(stderr)), "\n") // a login notice, then mkdir's
		err = errors.New(parse.SanitizeString(strings.Join(lines, "; ")))
	}
	why := a.whyNotWritable(ctx, dir, size)
	if why == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %s; pass --worker-bin PATH in a directory you can write (%w)", what, why, err)
}

// whyNotWritable asks the host what stops dir from taking size bytes
// ("" when it cannot tell).
func (a Actor) whyNotWritable(ctx context.Context, dir string, size int64) string {
	return remote.WhyNotWritable(ctx, a.H, dir, size, "the binary")
}

package actions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	"github.com/synthwatch/synthwatch/remote"
)

// ErrPlatform means the host runs another OS or CPU than this build, and
// no build for it lies beside this one.
var ErrPlatform = errors.New("platform mismatch")

// Deployed is what a deploy put on the host.
type Deployed struct {
	Worker string               // the worker binary (dest, or ~/.local/bin/synthwatch)
	Agent  remote.InstallResult // the host agent, at its version's path
}

// Deploy uploads the build for the host's platform (this executable, or
// synthwatch-OS-ARCH beside it: remote.AgentBuild) to dest (or
// ~/.local/bin/synthwatch there), a temp file made executable then
// renamed over the old one, and installs it as the host agent now, at its
// version's path in the host's cache, as a poll would when it finds none.
func (a Actor) Deploy(ctx context.Context, dest string) (Deployed, error) {
	place, err := remote.ProbeAgentPlace(ctx, a.H)
	if err != nil {
		return Deployed{}, fmt.Errorf("deploy: %w", err)
	}
	bin, err := remote.AgentBuild(place.OS, place.Arch)
	if err != nil {
		return Deployed{}, fmt.Errorf("%w: %v", ErrPlatform, err)
	}
	if dest == "" {
		dest = path.Join(place.Home, ".local", "bin", "synthwatch")
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return Deployed{}, fmt.Errorf("deploy: %w", err)
	}
	if r, err := a.H.Exec(ctx, "mkdir", "-p", "--", path.Dir(dest)); err != nil || r.ExitCode != 0 {
		return Deployed{}, a.WhyNotWritten(ctx, "deploy: mkdir "+path.Dir(dest), path.Dir(dest), int64(len(data)), err, r.Stderr)
	}
	if err := a.H.WriteFile(ctx, dest, data, 0o755); err != nil {
		return Deployed{}, a.WhyNotWritten(ctx, "deploy to "+dest, path.Dir(dest), int64(len(data)), err, nil)
	}
	res, err := remote.InstallAgent(ctx, a.H, place, nil, nil)
	if err != nil {
		return Deployed{Worker: dest}, fmt.Errorf("deploy: the worker is at %s, but %w", dest, err)
	}
	return Deployed{Worker: dest, Agent: res}, nil
}

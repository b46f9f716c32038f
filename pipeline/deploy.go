package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strings"
)

// unameToGo maps `uname -sm` to Go's GOOS/GOARCH.
func unameToGo(uname string) (goos, goarch string) {
	f := strings.Fields(uname)
	if len(f) != 2 {
		return "", ""
	}
	goos = strings.ToLower(f[0])
	switch f[1] {
	case "x86_64", "amd64":
		goarch = "amd64"
	case "aarch64", "arm64":
		goarch = "arm64"
	case "armv7l":
		goarch = "arm"
	case "ppc64le", "s390x", "riscv64":
		goarch = f[1]
	default:
		goarch = f[1]
	}
	return goos, goarch
}

// ErrPlatform means the host runs another OS or CPU than this build.
var ErrPlatform = errors.New("platform mismatch")

// Deploy uploads this executable to the host (dest, or ~/.local/bin/synthwatch
// there) when the host's `uname -sm` matches this build: a temp file, made
// executable, then renamed over the old one.
func (a Actor) Deploy(ctx context.Context, dest string) (string, error) {
	r, err := a.H.Exec(ctx, "sh", "-c", `uname -sm; printf '%s\n' "$HOME"`)
	if err != nil {
		return "", fmt.Errorf("deploy: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(r.Stdout)), "\n")
	if r.ExitCode != 0 || len(lines) < 2 {
		return "", fmt.Errorf("deploy: uname failed: %s", r.Stderr)
	}
	goos, goarch := unameToGo(lines[0])
	if goos != runtime.GOOS || goarch != runtime.GOARCH {
		return "", fmt.Errorf("%w: the host is %s/%s (%s), this binary is %s/%s; build one for it with:\n"+
			"  GOOS=%s GOARCH=%s CGO_ENABLED=0 go build -o synthwatch-%s-%s ./cmd/synthwatch\n"+
			"then copy it to the host as ~/.local/bin/synthwatch (or pass --worker-bin)",
			ErrPlatform, goos, goarch, lines[0], runtime.GOOS, runtime.GOARCH, goos, goarch, goos, goarch)
	}
	if dest == "" {
		dest = path.Join(lines[1], ".local", "bin", "synthwatch")
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("deploy: %w", err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return "", fmt.Errorf("deploy: %w", err)
	}
	if r, err := a.H.Exec(ctx, "mkdir", "-p", "--", path.Dir(dest)); err != nil || r.ExitCode != 0 {
		return "", a.WhyNotWritten(ctx, "deploy: mkdir "+path.Dir(dest), path.Dir(dest), int64(len(data)), err, r.Stderr)
	}
	if err := a.H.WriteFile(ctx, dest, data, 0o755); err != nil {
		return "", a.WhyNotWritten(ctx, "deploy to "+dest, path.Dir(dest), int64(len(data)), err, nil)
	}
	return dest, nil
}

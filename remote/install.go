package remote

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The host-side programs of the install: where the agent goes (where.sh,
// shared by the launcher and the probe), the launcher's run of it
// (installed.sh) and the copy (install.sh).
// Their comments stay in the files: what crosses the link is the code.
var (
	//go:embed host/where.sh
	whereSrc string
	//go:embed host/installed.sh
	installedSrc string
	//go:embed host/loose.sh
	looseSrc string
	//go:embed host/install.sh
	installSrc string

	whereScript, looseScript, installedScript, installScript = shCode(whereSrc), shCode(looseSrc), shCode(installedSrc), shCode(installSrc)
)

// InstalledAgentSh is sh that sets ia to the installed agent's path when
// it is there and safe to run (loose.sh), else to "": a command that needs
// synthwatch on the host (report's digest) runs it when none is deployed.
var InstalledAgentSh = `ia=$(set -- "" "" ` + Quote(AgentProto) + "\n" + whereScript + looseScript +
	`if [ -f "$ab" ] && [ -x "$ab" ] && ! loose "$ab"; then printf %s "$ab"; fi)
`

// shCode is a script without its comment lines and indents: the launcher
// rides on every agent's command line, beside the first request.
func shCode(src string) string {
	var b strings.Builder
	for _, l := range strings.Split(src, "\n") {
		l = strings.TrimLeft(l, " \t")
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// InputExecer runs a command with stdin from a reader (a copy of the agent).
type InputExecer interface {
	ExecInput(ctx context.Context, stdin io.Reader, argv ...string) (ExecResult, error)
}

// AgentPlace is where the installed agent goes on a host, and what the
// host has to receive it: where.sh's answer (the launcher's "missing"
// note, or the probe's line).
type AgentPlace struct {
	Dir      string // the folder of the agent (remote text)
	OS, Arch string // Go's names of the host's platform
	Gunzip   bool   // gunzip is there: the copy crosses compressed
	Sha256   bool   // sha256sum is there: the copy is checked by hash (else by size)
	Home     string // $HOME on the host (the probe's; remote text)
}

// parsePlace reads "GZ SUM OS ARCH DIR".
func parsePlace(s string) (AgentPlace, bool) {
	f := strings.SplitN(strings.TrimSuffix(s, "\n"), " ", 5)
	if len(f) != 5 || f[4] == "" {
		return AgentPlace{}, false
	}
	return AgentPlace{Gunzip: f[0] == "1", Sha256: f[1] == "1", OS: f[2], Arch: f[3], Dir: f[4]}, true
}

// ProbeAgentPlace asks the host where its agent goes (synthwatch deploy's
// install-now; a poll learns it from the launcher's note instead).
func ProbeAgentPlace(ctx context.Context, h Host) (AgentPlace, error) {
	r, err := h.Exec(ctx, "sh", "-c", whereScript+`printf '%s %s %s %s %s\n%s\n' "$gz" "$sum" "$os" "$arch" "$ad" "$HOME"`, "synthwatch-where", "", "", AgentProto)
	if err != nil {
		return AgentPlace{}, err
	}
	lines := strings.Split(strings.TrimRight(string(r.Stdout), "\n"), "\n")
	var p AgentPlace
	ok := len(lines) >= 2
	if ok {
		p, ok = parsePlace(lines[len(lines)-2])
		p.Home = lines[len(lines)-1]
	}
	if r.ExitCode != 0 || !ok || p.Home == "" {
		return AgentPlace{}, fmt.Errorf("the host did not say where its agent goes: %s", cut(strings.TrimSpace(string(r.Stderr)), 256))
	}
	return p, nil
}

// AgentBuild is the synthwatch build to install on a host of goos/goarch:
// this executable when it is of that platform, else synthwatch-GOOS-GOARCH
// beside it (how a release ships them); else an error naming the command
// that makes one.
func AgentBuild(goos, goarch string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		return self, nil
	}
	name := "synthwatch-" + goos + "-" + goarch
	beside := filepath.Join(filepath.Dir(self), name)
	if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
		return beside, nil
	}
	return "", fmt.Errorf("no build for the host's %s/%s (this one is %s/%s, and no %s beside it); make one with:\n  GOOS=%s GOARCH=%s CGO_ENABLED=0 go build -o %s ./cmd/synthwatch",
		goos, goarch, runtime.GOOS, runtime.GOARCH, beside, goos, goarch, beside)
}

// InstallResult is what an install cost.
type InstallResult struct {
	Path  string        // the agent on the host
	Bytes int64         // what crossed the link (compressed when the host has gunzip)
	Size  int64         // the agent's size
	Took  time.Duration // from the start to the rename
}

// InstallAgent copies the agent for place's platform to place.Dir on h:
// gzip'd when the host has gunzip, in parts on channels at once
// (sendAgent), to a temp name, checked by size and hash, then renamed. sent, when not nil, counts the bytes sent so far
// (out of total, set first), for a progress figure.
func InstallAgent(ctx context.Context, h Host, place AgentPlace, sent, total *atomic.Int64) (InstallResult, error) {
	start := time.Now()
	ie, ok := h.(InputExecer)
	if !ok {
		return InstallResult{}, errors.New("this link cannot copy a file on stdin")
	}
	bin, err := AgentBuild(place.OS, place.Arch)
	if err != nil {
		return InstallResult{}, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return InstallResult{}, err
	}
	sum := sha256.Sum256(data)
	wire, gz := data, "0"
	if place.Gunzip {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed) // the link, not the laptop's CPU, is the cost: BestSpeed is within 10 % of the best here, in a tenth of the time
		zw.Write(data)
		zw.Close()
		wire, gz = b.Bytes(), "1"
	}
	if total != nil {
		total.Store(int64(len(wire)))
	}
	args := []string{"sh", "-c", looseScript + installScript, "synthwatch-install", place.Dir, hex.EncodeToString(sum[:]), strconv.Itoa(len(data)), gz}
	r, err := sendAgent(ctx, ie, args, wire, sent)
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", r.ExitCode, cut(strings.TrimSpace(string(r.Stderr)), 512))
		if r.ExitCode != 3 { // a write that failed: the host says why, as deploy's does
			if why := WhyNotWritable(ctx, h, place.Dir, int64(len(data)), "the agent"); why != "" {
				err = fmt.Errorf("%s (%w)", why, err)
			}
		}
	}
	if err != nil {
		return InstallResult{}, fmt.Errorf("install the agent to %s: %w", place.Dir, err)
	}
	return InstallResult{Path: place.Dir + "/synthwatch", Bytes: int64(len(wire)), Size: int64(len(data)), Took: time.Since(start)}, nil
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if len(p) > 256<<10 {
		p = p[:256<<10] // a figure that moves on a slow link
	}
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// installing is an agent's copy under way, or done.
type installing struct {
	place       AgentPlace
	sent, total atomic.Int64
	start       chan struct{} // closed when the copy may take the link (StartInstall)
	startOnce   sync.Once
	done        bool
	ended       chan struct{} // closed when done
	err         error
	res         InstallResult
}

// WaitInstall waits for an install under way (a one-shot command's, so
// the next one finds the agent): its result, and whether one was started.
func (a *Agent) WaitInstall(ctx context.Context) (InstallResult, error, bool) {
	a.mu.Lock()
	in := a.inst
	a.mu.Unlock()
	if in == nil {
		return InstallResult{}, nil, false
	}
	in.release()
	select {
	case <-in.ended:
	case <-ctx.Done():
		return InstallResult{}, ctx.Err(), true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return in.res, in.err, true
}

// AutoInstall has the agent installed where the launcher says none is
// (AgentPlace), beside the fallback's reads: the polls in hand are read by
// the fallback (host/fallback.sh), and the first poll after the copy by
// the Go agent.
func (a *Agent) AutoInstall(on bool) {
	a.mu.Lock()
	a.autoInstall = on
	a.mu.Unlock()
}

// Installed is the last install's result, if one ended well.
func (a *Agent) Installed() (InstallResult, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.inst == nil || !a.inst.done || a.inst.err != nil {
		return InstallResult{}, false
	}
	return a.inst.res, true
}

// StartInstall lets a copy the launcher asked for (maybeInstall) begin:
// the poll that found no agent has its answer. Begun beside that poll, the
// copy's megabytes took the link (and, here, the cores) from the
// fallback's answer that the first screen waits for.
func (a *Agent) StartInstall() {
	a.mu.Lock()
	in := a.inst
	a.mu.Unlock()
	if in != nil {
		in.release()
	}
}

func (in *installing) release() { in.startOnce.Do(func() { close(in.start) }) }

// maybeInstall sets up the copy when the launcher said the agent is
// missing (a.mu held): once a link's life, whatever its sessions. It
// starts once the poll in hand has its answer (StartInstall), or a
// one-shot command waits for it (WaitInstall).
func (a *Agent) maybeInstall() {
	if !a.autoInstall || a.place == nil || a.inst != nil || a.fw != nil {
		return
	}
	h, ok := a.h.(Host)
	if !ok {
		return
	}
	in := &installing{place: *a.place, start: make(chan struct{}), ended: make(chan struct{})}
	a.inst = in
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	a.stopInstall = cancel
	go func() {
		defer cancel()
		var res InstallResult
		var err error
		select {
		case <-in.start:
			res, err = InstallAgent(ctx, h, in.place, &in.sent, &in.total)
		case <-ctx.Done():
			err = ctx.Err()
		}
		a.mu.Lock()
		in.done, in.err, in.res = true, err, res
		if err == nil { // the next poll starts the Go agent
			a.swap, a.noAgent = true, nil
		}
		a.mu.Unlock()
		close(in.ended)
	}()
}

// installKind is what an install adds to Kind's "fallback (…)" (a.mu held).
func (a *Agent) installKind() string {
	in := a.inst
	switch {
	case a.refused != "":
		mode, rest, _ := strings.Cut(a.refused, " ")
		uid, p, _ := strings.Cut(rest, " ")
		return fmt.Sprintf("refused to run the agent: %s has owner uid %s and mode %s; it must be the user's (or root's) and not writable by group or others, as OpenSSH's StrictModes asks", cut(p, 256), uid, mode)
	case in == nil:
		return ""
	case !in.done:
		pct := int64(0)
		if t := in.total.Load(); t > 0 {
			pct = 100 * in.sent.Load() / t
		}
		return fmt.Sprintf("installing the agent to %s: %d %%", cut(in.place.Dir, 256), pct)
	case in.err != nil:
		return "the agent was not installed: " + cut(in.err.Error(), 512)
	}
	return "the agent is installed at " + cut(in.res.Path, 256) + "; the next poll reads through it"
}

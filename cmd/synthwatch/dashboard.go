package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/tui"
	"golang.org/x/term"
)

type dashFlags struct {
	hostFlags
	readOnly   bool
	poll       time.Duration
	stallAfter time.Duration
	grace      time.Duration
	quitNote   func() string // if set, run on quit and printed instead of the model's message
	fleet      string        // --fleet NAME: config.toml's [fleets.NAME] hosts
}

// addDashboard makes the root command run the dashboard: synthwatch [flags] HOST.
func addDashboard(root *cobra.Command) {
	var f dashFlags
	root.Use = "synthwatch [flags] [user@]host[:port] [host...]"
	root.Args = cobra.ArbitraryArgs // several hosts: the fleet screen (fleet.go)
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && f.local == "" && f.fleet == "" {
			return cmd.Help()
		}
		hosts, err := fleetHosts(args, f.fleet)
		if err != nil {
			return err
		}
		if len(hosts) > 1 || (f.fleet != "" && len(hosts) > 0) {
			return runFleet(cmd, hosts, f)
		}
		return runDashboard(cmd, hosts, f)
	}
	f.add(root)
	fl := root.Flags()
	fl.BoolVar(&f.readOnly, "read-only", false, "watch only: no launch, kill, resume or restart keys")
	fl.DurationVar(&f.poll, "poll", 2*time.Second, "poll interval")
	fl.DurationVar(&f.stallAfter, "stall-after", 10*time.Minute, "a category with no new records for this long is stalled")
	fl.DurationVar(&f.grace, "grace", actions.KillGrace, "kill: wait this long after SIGTERM before SIGKILL (more than the worker's 30 s drain)")
	fl.StringVar(&f.fleet, "fleet", "", "watch the hosts of [fleets.NAME] in config.toml (and any given) on the fleet screen")
}

func runDashboard(cmd *cobra.Command, args []string, f dashFlags) error {
	if f.local != "" && len(args) > 0 {
		return usageErr(errors.New("--local takes no host"))
	}
	if err := f.resolve(cmd, args); err != nil {
		return err
	}
	f.poll, f.stallAfter = f.set.Poll, f.set.StallAfter
	name := f.local
	var o *remote.Options
	if f.local == "" {
		name = args[0]
		o = &remote.Options{Target: name, Port: f.port, Identities: f.identities, ConfigFile: f.config, Jump: f.jump, Opts: f.opts}
	}
	return runTUI(cmd, name, f, o)
}

// runTUI runs the dashboard on a host reached with o (nil: a local root),
// with f's settings resolved.
func runTUI(cmd *cobra.Command, name string, f dashFlags, o *remote.Options) error {
	logf := openLog(f.stateDir)
	defer logf.Close()
	slog.SetDefault(slog.New(slog.NewTextHandler(logf, logOpts(slog.LevelInfo))))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP, syscall.SIGTERM)
	defer stop()
	prompter := tui.NewPrompter()
	live, closeLive, err := f.openLive(ctx, name, o, prompter)
	if err != nil {
		return err
	}
	defer closeLive()
	if os.Getenv("GOMAXPROCS") == "" {
		// An idle dashboard has little to do and nothing to do in parallel:
		// one P spares the scheduler's wakeups on every timer (idle CPU 1.1
		// -> 0.7 %). Until the first poll is in, the dial, the terminal's
		// start and the first answer's parse run side by side: at 50 ms, one
		// P from the start put the first table some 15 ms later.
		live.Polled = sync.OnceFunc(func() { runtime.GOMAXPROCS(1) })
	}
	if err := runProgram(ctx, cmd, tui.New(live, f.tuiConfig()), prompter, f.quitNote); err != nil || f.quitNote != nil || ctx.Err() != nil {
		return err // the demo's own host, or a signal (exit 0, as status --follow's)
	}
	return linksExit([]*Live{live})
}

// linksExit is the dashboard's exit once it quit: a host it never reached,
// or whose link failed for good, exits as status would (linkErr: 4 for a
// host key, 3 for the rest); a fleet's is the worst host's. The quit
// message has said it: nothing more is printed.
func linksExit(lives []*Live) error {
	var worst error
	for _, l := range lives {
		if err := linkErr(l.Name, l.Watcher.Link()); exitCode(err) > exitCode(worst) {
			worst = err
		}
	}
	if worst == nil {
		return nil
	}
	return quietError{worst}
}

// openLive opens the host (o nil: a local root) and its watcher, as f's
// settings say. The link dials in the background: a host that is down
// shows so in the dashboard. closeLive closes the link only: the worker
// keeps running on the host.
func (f dashFlags) openLive(ctx context.Context, name string, o *remote.Options, prompter remote.Prompter) (live *Live, closeLive func(), err error) {
	live = &Live{Name: name, Grace: f.grace}
	closeLive = func() {}
	if o == nil {
		live.Remote = remote.Local{GoSums: true}
	} else {
		o.Prompt = prompter
		h, err := remote.Open(ctx, *o)
		if err != nil {
			return nil, nil, connectErr(err)
		}
		closeLive = func() {
			if err := closeWithin(h, 2*time.Second); err != nil {
				slog.Warn("quit", "host", name, "err", err)
			}
		}
		live.Remote, live.Reconnect = h, h.ReconnectNow
		go logLink(ctx, name, h)
	}
	rootHost := name
	if o == nil {
		rootHost = "local"
	}
	live.RootCheck = func(ctx context.Context) error { return f.checkRoot(ctx, live.Remote, rootHost) }
	tl := timeline.New(2000, f.historyPath(rootHost))
	live.Watcher = pipeline.NewWatcher(live.Remote, pipeline.Options{Host: name, Root: f.root, ServerURL: f.serverURL, ServerURLFrom: f.set.Get("server_url").Origin, WorkerBin: f.workerBin, InstallAgent: !f.noInstall, StallAfter: f.stallAfter, DiskFloor: f.set.DiskFloor, HintPath: f.hintPath(rootHost), SumWithin: pipeline.SumWithin}, tl)
	live.Actor = f.actor(live.Remote)
	slog.Info("dashboard start", "host", name, "root", f.root, "root_from", f.set.Get("root").Origin)
	return live, closeLive, nil
}

// tuiConfig is the dashboard's look and pace from f's settings.
func (f dashFlags) tuiConfig() tui.Config {
	dark := true
	if term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd())) {
		dark = lipgloss.HasDarkBackground(os.Stdin, os.Stdout)
	}
	return tui.Config{PollEvery: f.poll, ReadOnly: f.readOnly, Dark: dark, Plain: os.Getenv("NO_COLOR") != "", Notify: f.set.Notify}
}

// runProgram runs the dashboard's model (one host's, or the fleet's) until
// it quits or ctx ends, then prints its quit message (or quitNote's).
func runProgram(ctx context.Context, cmd *cobra.Command, m tea.Model, prompter *tui.Prompter, quitNote func() string) error {
	// 20 frames a second: a changed view waits for the next frame, at 10
	// up to 100 ms (the first table, a key's answer); idle, 0.73 % of a
	// core against 0.65 % at 10 and 0.83 % at 30 (BenchmarkIdleCPU)
	// the colour profile lipgloss found for stdout when it loaded: tea would
	// detect it again (terminfo, and inside tmux a "tmux info" run)
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(20), tea.WithColorProfile(lipgloss.Writer.Profile))
	prompter.Attach(p.Send)
	done := make(chan struct{})
	defer close(done)
	followStops(p, done)
	final, err := p.Run()
	// Refuse a question still open (a host key, a passphrase): the link's
	// supervisor waits on it, and the deferred h.Close waits on the supervisor.
	prompter.Close()
	if quitNote != nil {
		fmt.Fprintln(cmd.OutOrStdout(), quitNote())
	} else if fm, ok := final.(interface{ QuitMessage() string }); ok && fm.QuitMessage() != "" {
		fmt.Fprintln(cmd.OutOrStdout(), fm.QuitMessage())
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		slog.Error("dashboard", "err", err)
		return err
	}
	return nil
}

// closeWithin closes c, but a quitting dashboard does not wait on it for
// long: a close still blocked after d (a link black-holed mid-handshake)
// is left to the process exit, which drops the socket. The worker on the
// host is detached (setsid) and keeps running either way.
func closeWithin(c io.Closer, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("close the link: %w", err)
		}
		return nil
	case <-time.After(d):
		return fmt.Errorf("close the link: still blocked after %s; the exit drops it", d)
	}
}

// historyPath is the event history of this host (name, or "local") and
// root: one per host and root, or the demo's own file.
func (f *hostFlags) historyPath(host string) string {
	return f.statePath(host, "events.jsonl", timeline.StatePath)
}

// hintPath is where the servers pipeline.toml named are kept (beside the
// history): the first poll probes them beside its reads.
func (f *hostFlags) hintPath(host string) string {
	return f.statePath(host, "servers.json", pipeline.HintPath)
}

// statePath is a file of this host and root in the state directory, or
// the demo's own (name, in its directory).
func (f *hostFlags) statePath(host, name string, of func(host, root string) string) string {
	if f.stateDir != "" {
		return filepath.Join(f.stateDir, name)
	}
	root := f.root
	if root == "" {
		root = pipeline.DefaultRoot
	}
	return of(host, root)
}

// linkWatcher is the part of remote.SSH that logLink follows.
type linkWatcher interface {
	State() remote.ConnState
	Changed() <-chan struct{}
}

// logLink writes every change of the link to synthwatch.log, with the dial
// or auth error and the next try, so "why can't it connect" has an answer
// after the fact too.
func logLink(ctx context.Context, name string, h linkWatcher) {
	var was remote.ConnState
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.Changed():
		}
		st := h.State()
		if st.Phase == was.Phase && st.Err == was.Err && st.Attempt == was.Attempt {
			continue
		}
		was = st
		attrs := []any{"host", name, "phase", st.Phase.String()}
		if st.Attempt > 0 {
			attrs = append(attrs, "attempt", st.Attempt)
		}
		if !st.NextTry.IsZero() && st.Phase == remote.Reconnecting {
			attrs = append(attrs, "next_try", st.NextTry.Format(time.RFC3339))
		}
		switch {
		case st.Phase == remote.Connected:
			slog.Info("link up", attrs...)
		case st.Err != "":
			slog.Warn("link down", append(attrs, "err", st.Err)...)
		default:
			slog.Info("link", attrs...)
		}
	}
}

// openLog is the dashboard's log file, synthwatch.log in dir (default
// timeline.StateDir()): never stdout while the TUI runs.
func openLog(dir string) *os.File {
	if dir == "" {
		dir = timeline.StateDir()
	}
	p := filepath.Join(dir, "synthwatch.log")
	_ = os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f, _ = os.Open(os.DevNull)
	}
	return f
}

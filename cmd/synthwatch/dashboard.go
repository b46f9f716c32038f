package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
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
	quitNote   string // printed on quit instead of the model's message
}

// addDashboard makes the root command run the dashboard: synthwatch [flags] HOST.
func addDashboard(root *cobra.Command) {
	var f dashFlags
	root.Use = "synthwatch [flags] [user@]host[:port]"
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 {
			return usageErr(fmt.Errorf("one host at a time, got %d arguments", len(args)))
		}
		return nil
	}
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 && f.local == "" {
			return cmd.Help()
		}
		return runDashboard(cmd, args, f)
	}
	f.add(root)
	fl := root.Flags()
	fl.BoolVar(&f.readOnly, "read-only", false, "watch only: no launch, kill, resume or restart keys")
	fl.DurationVar(&f.poll, "poll", 2*time.Second, "poll interval")
	fl.DurationVar(&f.stallAfter, "stall-after", 10*time.Minute, "a category with no new records for this long is stalled")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "kill: wait this long after SIGTERM before SIGKILL")
}

func runDashboard(cmd *cobra.Command, args []string, f dashFlags) error {
	if os.Getenv("GOMAXPROCS") == "" {
		// A dashboard has little to do and nothing to do in parallel; one P
		// spares the scheduler's wakeups on every timer (idle CPU 1.1 -> 0.7 %).
		runtime.GOMAXPROCS(1)
	}
	conf, err := loadConfig()
	if err != nil {
		return usageErr(err)
	}
	name := f.local
	if len(args) == 1 {
		name = args[0]
	}
	changed := cmd.Flags().Changed
	hc := conf.Hosts[name]
	pick := func(flagVal string, flagName string, vals ...string) string {
		if changed(flagName) {
			return flagVal
		}
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return flagVal
	}
	f.root = pick(f.root, "root", hc.Root, conf.Root)
	f.serverURL = pick(f.serverURL, "server-url", hc.ServerURL, conf.ServerURL)
	f.workerBin = pick(f.workerBin, "worker-bin", hc.WorkerBin, conf.WorkerBin)
	if !changed("poll") && conf.PollInterval.Duration > 0 {
		f.poll = conf.PollInterval.Duration
	}
	if !changed("stall-after") && conf.StallAfter.Duration > 0 {
		f.stallAfter = conf.StallAfter.Duration
	}
	var o *remote.Options
	if f.local != "" {
		f.root = f.local
	} else {
		o = &remote.Options{Target: name, Port: f.port, Identities: f.identities, ConfigFile: f.config, Jump: f.jump, Opts: f.opts}
	}
	return runTUI(cmd, name, f, conf, o)
}

// runTUI runs the dashboard on a host reached with o (nil: a local root).
func runTUI(cmd *cobra.Command, name string, f dashFlags, conf fileConfig, o *remote.Options) error {
	changed := cmd.Flags().Changed
	logf := openLog()
	defer logf.Close()
	slog.SetDefault(slog.New(slog.NewTextHandler(logf, nil)))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP, syscall.SIGTERM)
	defer stop()
	prompter := tui.NewPrompter()
	live := &tui.Live{Name: name, Grace: f.grace}
	if o == nil {
		live.H = remote.Local{}
	} else {
		o.Prompt = prompter
		h, err := remote.Open(ctx, *o)
		if err != nil {
			return connectErr(err)
		}
		defer h.Close() // closes the link only: the worker keeps running on the host
		live.H, live.Reconn, live.ConnSrc = h, h.ReconnectNow, h.State
	}
	tl := pipeline.NewTimeline(2000, pipeline.StatePath(name))
	live.W = pipeline.NewWatcher(live.H, pipeline.Options{Host: name, Root: f.root, ServerURL: f.serverURL, StallAfter: f.stallAfter}, tl)
	live.Act = pipeline.Actor{H: live.H, Root: f.root, WorkerBin: f.workerBin}
	if changed("server-url") && f.serverURL != "" {
		live.Act.Extra = []string{"--server", f.serverURL}
	}
	osc := conf.Notify.OSC == nil || *conf.Notify.OSC
	off := map[string]bool{}
	for _, k := range conf.Notify.Off {
		off[k] = true
	}
	dark := true
	if term.IsTerminal(int(os.Stdin.Fd())) && term.IsTerminal(int(os.Stdout.Fd())) {
		dark = lipgloss.HasDarkBackground(os.Stdin, os.Stdout)
	}
	m := tui.New(live, tui.Config{PollEvery: f.poll, ReadOnly: f.readOnly, Dark: dark, Plain: os.Getenv("NO_COLOR") != "",
		Notify: tui.NotifyConfig{OSC: osc, Command: conf.Notify.Command, DisconnectAfter: conf.Notify.DisconnectAfter.Duration, Off: off}})
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithFPS(10)) // a dashboard needs no 60 fps: idle CPU
	prompter.Attach(p.Send)
	slog.Info("dashboard start", "host", name, "root", f.root)
	final, err := p.Run()
	if f.quitNote != "" {
		fmt.Fprintln(cmd.OutOrStdout(), f.quitNote)
	} else if fm, ok := final.(tui.Model); ok && fm.QuitMessage() != "" {
		fmt.Fprintln(cmd.OutOrStdout(), fm.QuitMessage())
	} else if name != "local" {
		fmt.Fprintln(cmd.OutOrStdout(), "synthwatch: the worker keeps running on "+name)
	}
	if err != nil && !errors.Is(err, tea.ErrProgramKilled) && !errors.Is(err, context.Canceled) {
		slog.Error("dashboard", "err", err)
		return err
	}
	return nil
}

// openLog is the dashboard's log file: never stdout while the TUI runs.
func openLog() *os.File {
	p := filepath.Join(filepath.Dir(pipeline.StatePath("x")), "synthwatch.log")
	_ = os.MkdirAll(filepath.Dir(p), 0o700)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		f, _ = os.Open(os.DevNull)
	}
	return f
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/sim"
	"github.com/synthwatch/synthwatch/tui"
)

func newDemoCmd() *cobra.Command {
	var o sim.DemoOptions
	var noTUI bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The whole system on this machine: sim, an SSH server, the real worker and the dashboard",
		Long: `demo lays out a pipeline root with five categories in a temp directory, starts an
SGLang stand-in (sim) and an SSH server on 127.0.0.1, and opens the dashboard on
it through the real SSH code. L, K, r and R start and stop a real worker process
(this executable). Unless --calm, a category stalls after a while (select it
with j/k and press R, y: it flows again within seconds) and later the server
crashes and comes back. q stops everything and removes the temp directory, the
dashboard's event history and log included (kept with --keep). --no-tui prints
the status every few seconds and does the restart itself.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := sim.StartDemo(o)
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			defer d.Close()
			self, err := os.Executable()
			if err != nil {
				return err
			}
			u, _ := user.Current()
			name := "demo"
			if u != nil {
				name = u.Username
			}
			cfgFile := filepath.Join(d.Dir, "home", "ssh_config") // the user's ~/.ssh is never read
			if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
				return err
			}
			ro := &remote.Options{Target: name + "@" + d.SSH.Addr(), Identities: []string{d.SSH.KeyPath}, ConfigFile: cfgFile,
				Home: filepath.Join(d.Dir, "home"), SSHBinary: "none",
				Opts: []string{"UserKnownHostsFile=" + d.SSH.KnownHosts, "StrictHostKeyChecking=yes", "ServerAliveInterval=5"}}
			if noTUI {
				return demoStatusLoop(cmd, d, ro, self, o.Dir)
			}
			var f dashFlags
			f.root, f.serverURL, f.workerBin = d.Root, d.Sim.URL(), self
			f.poll, f.stallAfter, f.grace = time.Second, d.StallAfter(), actions.KillGrace
			f.quitNote = func() string { return demoQuitNote(d, o.Dir) }
			f.stateDir = filepath.Join(d.Dir, "state") // the demo's history and log go with it, not to ~/.local/state
			f.set.Notify = tui.NotifyConfig{OSC: true} // the user's config.toml is not the demo's
			return runTUI(cmd, "demo "+d.SSH.Addr(), f, ro)
		},
	}
	cmd.Flags().Float64Var(&o.Speed, "speed", 1, "time compression: 2 runs twice as fast")
	cmd.Flags().BoolVar(&o.Calm, "calm", false, "no scripted stall and server crash")
	cmd.Flags().StringVar(&o.Dir, "keep", "", "use and keep this directory, to inspect the files afterwards")
	cmd.Flags().BoolVar(&noTUI, "no-tui", false, "print status every few seconds instead of the dashboard")
	return cmd
}

// demoQuitNote stops the worker and says what q stopped.
func demoQuitNote(d *sim.Demo, kept string) string {
	note := "synthwatch demo: stopped the worker, sim and the SSH server"
	if !d.StopWorker() {
		note = "synthwatch demo: stopped sim and the SSH server (the worker had already ended)"
	}
	if kept != "" {
		note += "; the files are kept in " + kept
	}
	return note
}

// demoStatusLoop is --no-tui: launch the worker, then print the status
// every few seconds until the pipeline is done or a signal comes. It has no
// keys, so when the scripted stall shows it restarts the worker with the
// stalled category first itself, as R, y does in the dashboard.
func demoStatusLoop(cmd *cobra.Command, d *sim.Demo, ro *remote.Options, self, kept string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out := cmd.OutOrStdout()
	h, err := remote.Dial(ctx, *ro)
	if err != nil {
		return connectErr(err)
	}
	defer h.Close()
	w := pipeline.NewWatcher(h, pipeline.Options{Host: "demo", Root: d.Root, ServerURL: d.Sim.URL(), StallAfter: d.StallAfter()}, nil)
	act := actions.Actor{H: h, Root: d.Root, WorkerBin: self}
	pid, err := act.Launch(ctx, nil)
	if err != nil {
		return actionErr(err)
	}
	fmt.Fprintf(out, "demo: worker started (pid %d); Ctrl-C stops everything\n", pid)
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	told, restarted := 0, false
	for ctx.Err() == nil {
		s := w.Poll(ctx)
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintln(out)
		printStatus(out, s)
		var steps []string
		steps, told = d.StorySince(told)
		for _, st := range steps {
			fmt.Fprintln(out, "story:", st)
		}
		if !restarted && stalled(s, sim.StallCategory) {
			restarted = true
			fmt.Fprintf(out, "demo: %s is stalled; restarting the worker with it first (R, y in the dashboard; synthwatch restart HOST %s from a shell)\n", sim.StallCategory, sim.StallCategory)
			var all []string
			for _, c := range s.Categories {
				all = append(all, c.Name)
			}
			if r, err := act.Restart(ctx, sim.StallCategory, all, 10*time.Second, 0); err != nil {
				fmt.Fprintln(out, "demo: restart:", err)
			} else {
				fmt.Fprintf(out, "demo: worker restarted (pid %d, was %d)\n", r.PID, r.Stopped)
			}
		}
		if s.Worker.Phase == "done" {
			fmt.Fprintln(out, "demo: the pipeline is done")
			break
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	fmt.Fprintln(out, demoQuitNote(d, kept))
	return nil
}

// stalled reports whether cat is stalled in s.
func stalled(s snapshot.Snapshot, cat string) bool {
	for _, c := range s.Categories {
		if c.Name == cat {
			return c.State == snapshot.StateStalled
		}
	}
	return false
}

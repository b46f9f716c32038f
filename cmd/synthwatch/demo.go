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
(this executable). Unless --calm, a category stalls after a while (press R on
it) and later the server crashes and comes back. q stops everything and removes
the temp directory (kept with --keep).`,
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
				return demoStatusLoop(cmd, d, ro, self)
			}
			var f dashFlags
			f.root, f.serverURL, f.workerBin = d.Root, d.Sim.URL(), self
			f.poll, f.stallAfter, f.grace = time.Second, d.StallAfter(), 10*time.Second
			f.quitNote = "synthwatch demo: stopped the worker, sim and the SSH server"
			if o.Dir != "" {
				f.quitNote += "; the files are kept in " + o.Dir
			}
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

// demoStatusLoop is --no-tui: launch the worker, then print the status
// every few seconds until the pipeline is done or a signal comes.
func demoStatusLoop(cmd *cobra.Command, d *sim.Demo, ro *remote.Options, self string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	h, err := remote.Dial(ctx, *ro)
	if err != nil {
		return connectErr(err)
	}
	defer h.Close()
	w := pipeline.NewWatcher(h, pipeline.Options{Host: "demo", Root: d.Root, ServerURL: d.Sim.URL(), StallAfter: d.StallAfter()}, nil)
	act := pipeline.Actor{H: h, Root: d.Root, WorkerBin: self}
	pid, err := act.Launch(ctx, nil)
	if err != nil {
		return actionErr(err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "demo: worker started (pid %d); Ctrl-C stops everything\n", pid)
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		s := w.Poll(ctx)
		fmt.Fprintln(cmd.OutOrStdout())
		printStatus(cmd.OutOrStdout(), s)
		if story := d.Story(); story != "" {
			fmt.Fprintln(cmd.OutOrStdout(), "story:", story)
		}
		if s.Worker.Phase == "done" {
			fmt.Fprintln(cmd.OutOrStdout(), "demo: the pipeline is done")
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

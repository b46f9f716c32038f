package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/synthwatch/synthwatch/parse"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
)

func newLaunchCmd(name, short string) *cobra.Command {
	var f hostFlags
	var only []string
	cmd := &cobra.Command{
		Use:   name + " [flags] [user@]host[:port]",
		Short: short,
		Long:  short + ". The worker runs detached (setsid nohup) and survives the SSH session; it resumes by itself." + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.onHost(cmd, args, true, func(ctx context.Context, h remote.Host, _ string) error {
				var pid int
				err := interruptible(ctx, maybeLaunched, func(ctx context.Context) (err error) {
					pid, err = f.actor(h).Launch(ctx, only)
					return err
				})
				if err != nil {
					return nothingLeft(cmd.OutOrStdout(), pid, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "worker started: pid %d\n", pid)
				return nil
			})
		},
	}
	f.add(cmd)
	cmd.Flags().StringArrayVar(&only, "only", nil, "a category to run (repeat the flag; the order is kept)")
	return cmd
}

// What an interrupted action may have done anyway: a request that reached
// the host is not undone by the interrupt, only no longer waited for.
const (
	maybeLaunched  = "the worker may have started anyway (not confirmed; synthwatch status shows it)"
	maybeKilled    = "SIGTERM may have been sent: the worker may be stopping or stopped (not confirmed)"
	maybeRestarted = "the worker may have been stopped, and a new one started (not confirmed)"
	maybeDeployed  = "the binary on the host is the old one or the new one, whole (it is replaced by a rename)"
)

// interruptible runs an action with a context that ctrl+c (SIGINT)
// cancels, as esc does in the dashboard: the action stops waiting, and
// the error says what the host may have done anyway.
func interruptible(ctx context.Context, maybe string, do func(context.Context) error) error {
	ictx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	err := do(ictx)
	if err != nil && ictx.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("interrupted: %s: %w", maybe, err)
	}
	return err
}

// nothingLeft is what a launch's error means: actions.ErrNothingLeft
// (every category is done, nothing to start) is said and is no failure;
// any other error stays.
func nothingLeft(out io.Writer, pid int, err error) error {
	if errors.Is(err, actions.ErrNothingLeft) {
		fmt.Fprintf(out, "worker (pid %d): %v\n", pid, err)
		return nil
	}
	return err
}

// addStopFlags adds kill's and restart's --grace and --pid.
func addStopFlags(cmd *cobra.Command, grace *time.Duration, pid *int, pidHelp string) {
	cmd.Flags().DurationVar(grace, "grace", actions.KillGrace, "wait this long after SIGTERM before SIGKILL (more than the worker's 30 s drain)")
	cmd.Flags().IntVar(pid, "pid", 0, pidHelp)
}

func newKillCmd() *cobra.Command {
	var f hostFlags
	var grace time.Duration
	var pid int
	cmd := &cobra.Command{
		Use:   "kill [flags] [user@]host[:port]",
		Short: "Stop the worker: SIGTERM to its process group, SIGKILL after --grace",
		Long:  "kill stops the worker named in run/worker.json (or --pid), after checking that the pid really is the worker." + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.onHost(cmd, args, true, func(ctx context.Context, h remote.Host, _ string) error {
				var how string
				err := interruptible(ctx, maybeKilled, func(ctx context.Context) (err error) {
					how, err = f.actor(h).Kill(ctx, pid, grace)
					return err
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "worker stopped (%s)\n", how)
				return nil
			})
		},
	}
	f.add(cmd)
	addStopFlags(cmd, &grace, &pid, "the pid to stop (default: the one in worker.json)")
	return cmd
}

func newRestartCmd() *cobra.Command {
	var f hostFlags
	var grace time.Duration
	var pid int
	cmd := &cobra.Command{
		Use:   "restart [flags] [user@]host[:port] CATEGORY",
		Short: "Kill the worker, then launch it with CATEGORY first and the rest after",
		Long: "restart is what a stalled category needs: kill, then resume starting with it. It first checks that the worker can " +
			"start (the binary is on the host), so a restart that cannot launch leaves the job running. It stops a synthwatch " +
			"worker unasked; any other process that writes the worker's files (an old script) only when named with --pid." + exitCodesHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(errors.New("give [host] and one CATEGORY"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cat := args[len(args)-1]
			return f.onHost(cmd, args[:len(args)-1], true, func(ctx context.Context, h remote.Host, name string) error {
				snap := pipeline.NewWatcher(h, pipeline.Options{Host: name, Root: f.root, ServerURL: f.serverURL, ServerURLFrom: f.set.Get("server_url").Origin}, nil).Poll(ctx)
				var all []string
				for _, c := range snap.Categories {
					all = append(all, c.Name)
				}
				var r actions.Restarted
				err := interruptible(ctx, maybeRestarted, func(ctx context.Context) (err error) {
					r, err = f.actor(h).Restart(ctx, cat, all, grace, pid)
					return err
				})
				if r.Stopped > 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "stopped pid %d (%s): %s\n", r.Stopped, r.How, r.StoppedCmd)
				}
				if err != nil {
					return nothingLeft(cmd.OutOrStdout(), r.PID, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "worker restarted with %s first: pid %d\n", cat, r.PID)
				return nil
			})
		},
	}
	f.add(cmd)
	addStopFlags(cmd, &grace, &pid, "the process to stop (default: the synthwatch worker in worker.json); needed for a process that is not a synthwatch worker")
	return cmd
}

func newDeployCmd() *cobra.Command {
	var f hostFlags
	cmd := &cobra.Command{
		Use:   "deploy [flags] [user@]host[:port]",
		Short: "Copy this binary to the host (~/.local/bin/synthwatch, or --worker-bin) and install it as the host agent now",
		Long:  "deploy uploads the build for the host's `uname -sm` (this executable, or synthwatch-OS-ARCH beside it; otherwise it says how to cross-build) as the worker (over SFTP, or through the host's shell where it has no SFTP server), and installs it as the host agent at ~/.cache/synthwatch/agent/VERSION-OS-ARCH/synthwatch, which a poll would otherwise do when it finds none." + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.onHost(cmd, args, false, func(ctx context.Context, h remote.Host, _ string) error {
				var dep actions.Deployed
				err := interruptible(ctx, maybeDeployed, func(ctx context.Context) (err error) {
					dep, err = f.actor(h).Deploy(ctx, f.workerBin)
					return err
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "deployed to %s\n", parse.SanitizeString(dep.Worker))
				fmt.Fprintf(cmd.OutOrStdout(), "host agent installed to %s (%d bytes sent for %d, %.1fs)\n", parse.SanitizeString(dep.Agent.Path), dep.Agent.Bytes, dep.Agent.Size, dep.Agent.Took.Seconds())
				if w := f.actor(h).Shadowed(ctx, dep.Worker); w != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), w)
				}
				return nil
			})
		},
	}
	f.add(cmd)
	return cmd
}

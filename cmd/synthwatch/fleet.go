package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/tui"
)

// fleetHosts is the hosts to watch: those given, then --fleet NAME's from
// config.toml, each once, in that order.
// fleetRepaint: how often the hosts' news repaints the fleet (keys at once).
const fleetRepaint = 300 * time.Millisecond

func fleetHosts(args []string, fleet string) ([]string, error) {
	hosts := slices.Clone(args)
	if fleet != "" {
		p := configPath()
		conf, _, err := loadConfig(p)
		if err != nil {
			return nil, usageErr(err)
		}
		fc, ok := conf.Fleets[fleet]
		if !ok || len(fc.Hosts) == 0 {
			return nil, usageErr(fmt.Errorf("no fleet %q in %s: add [fleets.%s] with hosts = [\"gpu1\", \"gpu2\"]", fleet, p, fleet))
		}
		hosts = append(hosts, fc.Hosts...)
	}
	var out []string
	for _, h := range hosts {
		if h == "" {
			return nil, usageErr(errors.New("an empty host name"))
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// forHost is f with the settings of one host of a fleet resolved: its own
// root, server URL and worker binary ([hosts."…"], else the top level).
func (f hostFlags) forHost(cmd *cobra.Command, host string) (hostFlags, error) {
	if err := f.resolve(cmd, []string{host}); err != nil {
		return f, fmt.Errorf("%s: %w", host, err)
	}
	return f, nil
}

// runFleet runs the fleet screen over hosts: one link, one watcher and one
// dashboard model per host, each polling on its own.
func runFleet(cmd *cobra.Command, hosts []string, f dashFlags) error {
	if f.local != "" {
		return usageErr(errors.New("--local takes no host; a fleet is of SSH hosts"))
	}
	logf := openLog(f.stateDir)
	defer logf.Close()
	slog.SetDefault(slog.New(slog.NewTextHandler(logf, logOpts(slog.LevelInfo))))
	if os.Getenv("GOMAXPROCS") == "" {
		// The fleet waits on its links: their answers wake the runtime some
		// hundred times a second, and with a P to spare each wake-up also
		// wakes a thread to look for work that is not there (Fleet16:
		// about a tenth of the fleet's CPU). Its work fits one core.
		runtime.GOMAXPROCS(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP, syscall.SIGTERM)
	defer stop()
	prompter := tui.NewPrompter() // one for all: the fleet asks one question at a time
	var bes []tui.Backend
	var lives []*Live
	var closers []func()
	defer func() { // in parallel: each black-holed link may take closeWithin's 2 s
		var wg sync.WaitGroup
		for _, c := range closers {
			wg.Go(c)
		}
		wg.Wait()
	}()
	for i, host := range hosts {
		hf, err := f.hostFlags.forHost(cmd, host)
		if err != nil {
			return err
		}
		df := f
		df.hostFlags = hf
		df.poll, df.stallAfter = hf.set.Poll, hf.set.StallAfter
		if i == 0 { // the fleet's pace and notices are not per host: the first host's resolution
			f.poll, f.set = df.poll, hf.set
		}
		o := &remote.Options{Target: host, Port: f.port, Identities: f.identities, ConfigFile: f.config, Jump: f.jump, Opts: f.opts}
		live, closeLive, err := df.openLive(ctx, host, o, prompter)
		if err != nil {
			return fmt.Errorf("%s: %w", host, err)
		}
		closers = append(closers, closeLive)
		bes = append(bes, live)
		lives = append(lives, live)
	}
	cfg := f.tuiConfig()
	cfg.Repaint = fleetRepaint
	if err := runProgram(ctx, cmd, tui.NewFleet(bes, cfg), prompter, f.quitNote); err != nil || ctx.Err() != nil {
		return err // a signal: exit 0, as status --follow's
	}
	return linksExit(lives)
}

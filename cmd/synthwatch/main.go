// Command synthwatch watches and steers a multi-day synthetic-data job on a
// GPU host over SSH, and is also the worker that runs that job on the host.
package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"

	"github.com/synthwatch/synthwatch/parse"
)

func main() {
	if p := os.Getenv("SYNTHWATCH_CPUPROFILE"); p != "" { // for measuring idle cost
		if f, err := os.Create(p); err == nil {
			_ = pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		runAgent(os.Args[2:]) // before cobra's tree: 2 ms of every agent's start
		return
	}
	// a one-shot command's stderr carries warnings, not the log's notes
	// (the dashboard and the fleet log to a file, at info)
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, logOpts(slog.LevelWarn))))
	err := newRoot().Execute()
	if err == nil {
		return
	}
	var q interface{ Quiet() bool }
	if !errors.As(err, &q) {
		fmt.Fprintln(os.Stderr, "synthwatch:", err)
	}
	pprof.StopCPUProfile()
	var ec exitCoder
	if errors.As(err, &ec) {
		os.Exit(ec.ExitCode())
	}
	os.Exit(1)
}

// exitCoder lets a subcommand choose its exit status (see docs/HOSTS.md).
type exitCoder interface{ ExitCode() int }

// logOpts is every slog handler's options: each message and value logged
// is redacted (parse.Redact), so a server URL's password in an error never
// reaches stderr or the dashboard's log file.
func logOpts(level slog.Leveler) *slog.HandlerOptions {
	return &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		var s string
		switch v := a.Value.Any().(type) {
		case string:
			s = v
		case error:
			s = v.Error()
		default:
			return a
		}
		if r := parse.Redact(s); r != s {
			return slog.String(a.Key, r)
		}
		return a
	}}
}

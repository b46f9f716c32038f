package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

// newDigestCmd is the host side of `report`: the deployed binary reads the
// root where it lies and prints a summary of a few kilobytes.
func newDigestCmd() *cobra.Command {
	var o digestFlags
	cmd := &cobra.Command{
		Use:   "digest --root ROOT [--since 12h] [--every 1h]",
		Short: "Print a JSON summary of the pipeline's recent hours (runs on the host; `report` calls it)",
		Long: "digest reads the records' finish times, the server log and runs.jsonl under the root on this machine and prints one " +
			"compact JSON summary: records and tokens per category per interval (aligned to this machine's clock), the server's " +
			"throughput, incidents (crashes, restarts, stalls, runs starting and ending) and the runs." + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := o.options(time.Now())
			if err != nil {
				return usageErr(err)
			}
			s, err := digest.Build(opts)
			if err != nil {
				return actionErr(err)
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetEscapeHTML(false)
			if err := enc.Encode(s); err != nil {
				return actionErr(fmt.Errorf("digest: write: %w", err))
			}
			return nil
		},
	}
	o.add(cmd, true)
	return cmd
}

// digestFlags are digest's window flags; report has the same ones and
// passes them on.
type digestFlags struct {
	root         string
	since        string
	every, stall time.Duration
}

func (o *digestFlags) add(cmd *cobra.Command, root bool) {
	fl := cmd.Flags()
	if root {
		fl.StringVar(&o.root, "root", parse.DefaultRoot, "pipeline root")
	}
	fl.StringVar(&o.since, "since", "12h", "the window: a duration back from now (12h, 90m) or a time (2006-01-02T15:04:05Z07:00)")
	fl.DurationVar(&o.every, "every", time.Hour, "interval length; intervals start on a multiple of it from midnight")
	fl.DurationVar(&o.stall, "stall", parse.DefaultStallAfter, "a gap in a running category's records longer than this is a stall (report: else stall_after, as status has it)")
}

// args are the flags as the host's digest takes them.
func (o *digestFlags) args(root string) []string {
	return []string{"digest", "--root", root, "--since", o.since, "--every", o.every.String(), "--stall", o.stall.String()}
}

func (o *digestFlags) options(now time.Time) (digest.Options, error) {
	since, err := parseSince(o.since, now)
	if err != nil {
		return digest.Options{}, err
	}
	if o.every < time.Minute {
		return digest.Options{}, fmt.Errorf("--every %s: at least 1m", o.every)
	}
	return digest.Options{Root: o.root, Since: since, Now: now, Every: o.every, StallAfter: o.stall, Alive: digest.ProcAlive, Writers: digest.ProcWriters, Frozen: digest.ProcFrozen, Started: digest.ProcStarted, Keep: keepDir()}, nil
}

// keepDir is where a digest keeps the records' stamps: the user's cache,
// beside the agent; "" when SYNTHWATCH_NO_INSTALL says never to write
// there, or there is no cache.
func keepDir() string {
	if no, _ := strconv.ParseBool(os.Getenv("SYNTHWATCH_NO_INSTALL")); no {
		return ""
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "synthwatch", "digest")
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil && t.Before(now) {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want a positive duration (12h) or a past RFC 3339 time", s)
}

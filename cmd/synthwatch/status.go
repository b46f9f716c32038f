package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
)

func newStatusCmd() *cobra.Command {
	var f hostFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [flags] [user@]host[:port]",
		Short: "Print the pipeline's state once (a table, or --json) and exit",
		Long:  "status connects, reads the pipeline once and prints one Snapshot." + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			h, name, err := f.connectRoot(cmd, args)
			if err != nil {
				return err
			}
			defer h.Close()
			w := pipeline.NewWatcher(h, pipeline.Options{Host: name, Root: f.root, ServerURL: f.serverURL, StallAfter: f.set.StallAfter}, nil)
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			snap := w.Poll(ctx)
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(snap)
			}
			printStatus(cmd.OutOrStdout(), snap)
			return nil
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the Snapshot as JSON (schema 1)")
	cmd.Flags().Duration("stall-after", 10*time.Minute, "a category with no new records for this long is stalled (env SYNTHWATCH_STALL_AFTER, config.toml stall_after)")
	return cmd
}

// printStatus prints a Snapshot as text. Names, paths and warnings come
// from the host: no escape sequence or tab of theirs reaches the terminal.
func printStatus(out io.Writer, s pipeline.Snapshot) {
	safe := func(v string) string { return strings.ReplaceAll(parse.SanitizeString(v), "\t", " ") }
	fmt.Fprintf(out, "%s  %s  connection: %s\n", safe(s.Host), safe(s.Root), s.Connection.State)
	fmt.Fprintf(out, "worker: %s", s.Worker.State)
	if s.Worker.ByYou {
		fmt.Fprint(out, " (by you)")
	}
	if s.Worker.PID > 0 {
		fmt.Fprintf(out, " (pid %d)", s.Worker.PID)
	}
	if s.Worker.Category != "" {
		fmt.Fprintf(out, " on %s", safe(s.Worker.Category))
	}
	fmt.Fprintf(out, "   server: %s", s.Server.State)
	if s.Server.Source != "" {
		fmt.Fprintf(out, " %.0f tok/s, %d running, %d queued, KV %.0f%% (%s)", s.Server.GenThroughput, s.Server.RunningReqs, s.Server.QueueReqs, 100*s.Server.TokenUsage, s.Server.Source)
	}
	if s.Server.Reason != "" && (s.Server.State == pipeline.ServerDown || s.Server.State == pipeline.ServerUnhealthy || s.Server.State == pipeline.ServerCrashed) {
		fmt.Fprintf(out, " (%s)", safe(s.Server.Reason))
	}
	fmt.Fprintf(out, "   ETA: %s\n", fmtETA(s.ETASeconds))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CATEGORY\tCLASS\tDONE\tTARGET\tERR\tRATE/min\tETA\tSTATE")
	for _, c := range s.Categories {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%s\t%s\n", safe(c.Name), safe(c.Class), c.Done, c.Target, c.Errors, c.RatePerMin, fmtETA(c.ETASeconds), c.State)
	}
	tw.Flush()
	for _, w := range s.Warnings {
		fmt.Fprintln(out, "warning:", safe(w))
	}
}

func fmtETA(s *float64) string {
	if s == nil {
		return "-"
	}
	return pipeline.FormatETA(s)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/tui"
)

func newStatusCmd() *cobra.Command {
	var f hostFlags
	var asJSON, follow bool
	var count int
	var fleet string
	cmd := &cobra.Command{
		Use:   "status [flags] [user@]host[:port] [host...]",
		Short: "Print the pipeline's state once (a table, or --json) and exit; --follow keeps printing",
		Long: `status connects, reads the pipeline once and prints one Snapshot.

With --follow it keeps the one connection and prints a Snapshot on every
poll (--poll, default 2s) until interrupted: with --json one compact JSON
object a line, else the table under a "--- TIME" line. Each line is written
as soon as it is made, so a pipe sees it at once. Rates are measured across
the polls. A lost link does not end it: while the host reconnects the
Snapshots are stale (connection "reconnecting", every category "unknown");
only a link that cannot come back (a changed host key, auth refused) ends it,
with exit 4 for the host key, else 3. SIGINT or SIGTERM ends it with exit 0, never in the middle of a
line. --count N stops after N Snapshots.

Several hosts (or --fleet NAME, config.toml's [fleets.NAME] hosts) are
read in parallel, each on its own link with its own [hosts."…"] settings.
--json prints one object keyed by host, in the order given: a Snapshot, or
{"error", "exit_code"} for a host that could not be read, which fails no
other. With --follow each host prints a line per poll of its own as it
comes, {"HOST": Snapshot} (text: a "--- TIME HOST" block), so a slow host
holds up no other's lines. The exit code is the worst (highest) host's.` + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 0 {
				return usageErr(errors.New("--count must be 0 (no limit) or more"))
			}
			if count > 0 && !follow {
				return usageErr(errors.New("--count needs --follow"))
			}
			hosts, err := fleetHosts(args, fleet)
			if err != nil {
				return err
			}
			switch {
			case len(hosts) > 1 && f.local != "":
				return usageErr(errors.New("--local takes no host"))
			case len(hosts) > 1 && follow:
				return statusFollowFleet(cmd, hosts, &f, asJSON, count)
			case len(hosts) > 1:
				return statusFleet(cmd, hosts, &f, asJSON)
			case !follow:
				return statusOnce(cmd, hosts, &f, asJSON)
			}
			return statusFollow(cmd, hosts, &f, asJSON, count)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the Snapshot as JSON (schema 1); with --follow one compact object a line")
	cmd.Flags().BoolVar(&follow, "follow", false, "keep the connection and print a Snapshot on every poll until interrupted")
	cmd.Flags().StringVar(&fleet, "fleet", "", "read the hosts of [fleets.NAME] in config.toml (and any given)")
	cmd.Flags().IntVar(&count, "count", 0, "with --follow: stop after this many Snapshots (0: until interrupted)")
	cmd.Flags().Duration("poll", 2*time.Second, "with --follow: poll interval (env SYNTHWATCH_POLL_INTERVAL, config.toml poll_interval)")
	cmd.Flags().Duration("stall-after", 10*time.Minute, "a category with no new records for this long is stalled (env SYNTHWATCH_STALL_AFTER, config.toml stall_after)")
	return cmd
}

// watcher reads the dashboard's history of this host and root without
// writing to it (a class's last rate, for the pipeline ETA): status and the
// dashboard give the same figures, and scripts leave no trace in it. The
// servers hint beside it (hintPath) is written when pipeline.toml's servers
// change: a cache of what the host said, not history.
func (f *hostFlags) watcher(h remote.Host, name string, onePoll bool) *pipeline.Watcher {
	host := name
	if f.local != "" {
		host = "local"
	}
	tl := timeline.Read(2000, f.historyPath(host))
	return pipeline.NewWatcher(h, pipeline.Options{Host: name, Root: f.root, ServerURL: f.serverURL, ServerURLFrom: f.set.Get("server_url").Origin, WorkerBin: f.workerBin, InstallAgent: !f.noInstall, StallAfter: f.set.StallAfter, DiskFloor: f.set.DiskFloor, OnePoll: onePoll, HintPath: f.hintPath(host)}, tl)
}

// statusOnce is plain status: one poll, one Snapshot.
func statusOnce(cmd *cobra.Command, args []string, f *hostFlags, asJSON bool) error {
	return f.onHost(cmd, args, false, func(ctx context.Context, h remote.Host, name string) error {
		ctx, cancel := context.WithTimeout(ctx, tui.FirstReadLimit) // the first read of thousands of categories by the shell takes minutes
		defer cancel()
		w := f.watcher(h, name, true)
		snap := w.Poll(ctx)
		defer finishInstall(ctx, w)
		if err := f.checkFound(ctx, h, name, snap); err != nil {
			if asJSON {
				writeJSONError(cmd.OutOrStdout(), err)
			}
			return err
		}
		if asJSON {
			enc := json.NewEncoder(termSafe{cmd.OutOrStdout()})
			enc.SetIndent("", "  ")
			if err := enc.Encode(snap); err != nil {
				return err
			}
		} else {
			printStatus(cmd.OutOrStdout(), snap)
		}
		if m := snapshot.ManifestError(snap); m != "" {
			return errors.New(parse.SanitizeString(m)) // exit 1: the job's own definition was not read
		}
		return nil
	})
}

// finishInstall waits, after the answer is out, for the agent's copy
// that the poll started, so the next status reads through the agent; the
// log says how it went (stdout and stderr stay the answer's).
func finishInstall(ctx context.Context, w *pipeline.Watcher) {
	res, err, ok := w.WaitInstall(ctx)
	switch {
	case !ok:
	case err != nil:
		slog.Warn("the host agent was not installed", "err", parse.SanitizeString(err.Error()))
	default:
		slog.Info("installed the host agent; the next read goes through it", "path", parse.SanitizeString(res.Path), "sent", res.Bytes, "size", res.Size, "took", res.Took.Round(time.Millisecond))
	}
}

// statusFollow is status --follow: one host and one Watcher for every
// poll, a Snapshot printed per poll, each in one unbuffered write (a pipe
// sees every line at once), until a signal, or
// count Snapshots (count > 0).
func statusFollow(cmd *cobra.Command, args []string, f *hostFlags, asJSON bool, count int) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd.SetContext(ctx) // a signal while connecting ends it with nothing printed and exit 0 (onHost)
	return f.onHost(cmd, args, true, func(ctx context.Context, h remote.Host, name string) error {
		return followSnapshots(ctx, cmd.OutOrStdout(), f.watcher(h, name, false), name, f.set.Poll, asJSON, count, "")
	})
}

// followSnapshots prints a Snapshot of w on every poll until ctx ends or
// count Snapshots (count > 0) are out. A fleet's host gives its key: each
// JSON line is then {"KEY": Snapshot}, each text one is headed by it.
//
// The poll runs beside the cadence: while one has not answered and the
// link is quiet (snapshot.Connection.Quiet: no answer for two polls), a
// line is still printed at every interval, the last figures made stale
// and stamped with that line's own time, so a reader sees a black-holed
// link at once, not 45 s later under an old time.
func followSnapshots(ctx context.Context, out io.Writer, w *pipeline.Watcher, name string, every time.Duration, asJSON bool, count int, key string) error {
	if every <= 0 {
		every = 2 * time.Second
	}
	var buf bytes.Buffer
	emit := func(snap snapshot.Snapshot) error {
		buf.Reset()
		switch {
		case asJSON && key != "":
			_ = json.NewEncoder(termSafe{&buf}).Encode(map[string]snapshot.Snapshot{key: snap})
		case asJSON:
			_ = json.NewEncoder(termSafe{&buf}).Encode(snap) // compact: one object, one line
		default:
			head := snap.Time.Local().Format("2006-01-02 15:04:05")
			if key != "" {
				head += " " + key
			}
			if snap.Connection.State == snapshot.LinkQuiet {
				head += " stale"
			}
			fmt.Fprintf(&buf, "--- %s\n", head)
			printStatus(&buf, snap)
		}
		if _, err := out.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("write: %w", err) // the reader went away: exit 1 (onHost)
		}
		return nil
	}
	pctx, cancelPolls := context.WithCancel(ctx)
	defer cancelPolls()
	results := make(chan snapshot.Snapshot, 1)
	poll := func() {
		c, cancel := context.WithTimeout(pctx, 2*time.Minute)
		defer cancel()
		results <- w.Poll(c)
	}
	var last snapshot.Snapshot
	t := time.NewTimer(0)
	defer t.Stop()
	inflight, quietSince := false, false // quietSince: stale lines went out since this poll began
	var start time.Time
	for n := 0; count == 0 || n < count; {
		select {
		case <-ctx.Done():
			return nil
		case snap := <-results:
			inflight = false
			if ctx.Err() != nil {
				return nil // a poll cut short by the signal is not printed
			}
			if quietSince {
				// it spanned stale lines: its figures are older than they are, read again now
				quietSince = false
				t.Reset(0)
				continue
			}
			if err := emit(snap); err != nil {
				return err
			}
			n++
			last = snap
			if snap.Connection.State == snapshot.LinkFailed {
				return linkErr(name, snap.Connection) // 4 for a host key, as one-shot status
			}
			t.Reset(max(0, every-time.Since(start))) // a poll every interval, not interval + poll time
		case <-t.C:
			if !inflight {
				inflight, start = true, time.Now()
				go poll()
				t.Reset(every) // the cadence, should this poll not answer
				continue
			}
			if c := w.Link(); !last.Time.IsZero() && c.Quiet(time.Now(), every) {
				if err := emit(snapshot.QuietSnapshot(last, c, time.Now())); err != nil {
					return err
				}
				n++
				quietSince = true
			}
			t.Reset(every)
		}
	}
	return nil
}

// printStatus prints a Snapshot as text. Names, paths and warnings come
// from the host: no escape sequence or tab of theirs reaches the terminal.
func printStatus(out io.Writer, s snapshot.Snapshot) {
	safe := func(v string) string { return strings.ReplaceAll(parse.SanitizeString(v), "\t", " ") }
	fmt.Fprintf(out, "%s  %s  connection: %s", safe(s.Host), safe(s.Root), s.Connection.State)
	if c := s.Connection; c.Stale() && c.LastContact != nil && !s.Time.IsZero() {
		fmt.Fprintf(out, " (last contact %s ago)", s.Time.Sub(*c.LastContact).Round(time.Second))
	}
	if r := s.Connection.ReaderText(); r != "" {
		fmt.Fprintf(out, "  read by: %s", safe(r))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "worker: %s", s.Worker.State)
	if s.Worker.State == snapshot.WorkerNone {
		fmt.Fprint(out, " (never ran here)")
	}
	if s.Worker.ByYou {
		fmt.Fprint(out, " (by you)")
	}
	if s.Worker.PID > 0 {
		fmt.Fprintf(out, " (pid %d)", s.Worker.PID)
	}
	if s.Worker.Category != "" {
		fmt.Fprintf(out, " on %s", safe(s.Worker.Category))
	}
	if s.Worker.Reason != "" && s.Worker.State != snapshot.WorkerRunning {
		fmt.Fprintf(out, " (%s)", safe(s.Worker.Reason))
	}
	if d := tui.StoppingText(s); d != "" {
		fmt.Fprintf(out, " %s", d)
	}
	fmt.Fprintf(out, "   server: %s", s.Server.State)
	if idle := snapshot.IdleText(s.Server); idle != "" {
		fmt.Fprintf(out, " (%s; %s)", idle, snapshot.FiguresLabel(s.Server))
	} else if s.Server.Source != "" {
		gen := fmt.Sprintf("%.0f tok/s", s.Server.GenThroughput)
		switch {
		case s.Server.GenThroughputNote == "needs two samples":
			gen = "? tok/s (needs two samples)"
		case s.Server.GenThroughputNote != "":
			gen = "~" + gen
		}
		fmt.Fprintf(out, " %s, %d running, %d queued, KV %.0f%% (%s)", gen, s.Server.RunningReqs, s.Server.QueueReqs, 100*s.Server.TokenUsage, snapshot.FiguresLabel(s.Server))
	}
	if s.Server.Reason != "" && snapshot.ServerTrouble(s.Server.State) {
		fmt.Fprintf(out, " (%s)", safe(s.Server.Reason))
	}
	if s.Server.URL != "" {
		fmt.Fprintf(out, " [%s, %s]", safe(s.Server.URL), safe(s.Server.URLFrom))
	}
	eta := fmtETA(s.ETASeconds)
	for _, c := range s.Categories {
		if s.ETASeconds == nil && !snapshot.Final(c.State) && !s.Connection.Stale() {
			eta = snapshot.ETAText(s) // work is left: what is known of it, or "?"
		}
	}
	fmt.Fprintf(out, "   ETA: %s\n", eta)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CATEGORY\tCLASS\tDONE\tTARGET\tERR\tRATE/min\tETA\tSTATE")
	for _, c := range s.Categories {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.1f\t%s\t%s\n", safe(c.Name), safe(c.Class), c.Done, c.Target, c.Errors, c.RatePerMin, fmtETA(c.ETASeconds), c.State)
	}
	tw.Flush()
	for _, c := range s.Categories {
		if c.Reason != "" { // why a row is stalled, stopped or died: the words every view shows
			fmt.Fprintf(out, "%s: %s: %s\n", safe(c.Name), c.State, safe(c.Reason))
		}
	}
	for _, c := range s.Categories {
		if len(c.OverCap) > 0 { // past its token budget or max_samples: the dashboard's words
			fmt.Fprintf(out, "%s: %s\n", safe(c.Name), parse.OverCapsText(c.OverCap))
		}
	}
	// tokens and provenance below the table: its eight columns stay as scripts read them
	partial := ""
	if s.TokensPartial {
		partial = " (" + partialText(s.Categories) + ")"
		if s.TokensSumming != nil { // by the fallback's slices: --follow's lines say how far
			partial = " (" + partialText(s.Categories) + ": " + s.TokensSumming.Text() + ")"
		}
	}
	fmt.Fprintf(out, "completion tokens: %s%s\n", parse.TokenFigure(fmt.Sprint(s.CompletionTokens), s.TokensUnknown), partial)
	for _, c := range s.Categories {
		if c.CompletionTokens != nil || c.TokenBudget > 0 || len(c.Configs) > 0 {
			fmt.Fprintf(out, "  %s: %s", safe(c.Name), parse.TokenFigure(tokensText(c)+" tokens", c.TokensUnknown))
			if line := snapshot.ConfigLine(c.Configs); line != "" {
				fmt.Fprintf(out, "; records by config: %s", safe(line))
			}
			if c.Outcomes != nil {
				fmt.Fprintf(out, "; ended: %s", c.Outcomes.Text())
			}
			fmt.Fprintln(out)
		}
	}
	printGate(out, s.Categories, safe)
	if s.Capture != nil { // pipeline.toml's [capture]: the next stage's disk
		fmt.Fprintln(out, s.Capture.Text())
	}
	printSpend(out, s)
	printServerFigures(out, s.Server)
	if b := s.Baseline.Server; b != nil {
		fmt.Fprintf(out, "baseline: gen %.0f tok/s, median %.0f over %d min", b.Now, b.Median, b.Minutes)
		if b.Cause != "" {
			fmt.Fprintf(out, "; DROP since %s: %s", b.DropSince.Local().Format("15:04"), safe(b.Cause))
		}
		fmt.Fprintln(out)
	}
	if v := tui.VitalsText(s.Vitals); v != "" {
		fmt.Fprintln(out, "host:", safe(v))
	}
	for _, w := range s.Warnings {
		fmt.Fprintln(out, "warning:", safe(w))
	}
}

// partialText says why categories are missing from the tokens' sum: not
// added up yet (it comes), or their records cannot be counted (it does not
// come by waiting; the warnings say why).
func partialText(cats []snapshot.Category) string {
	var yet, unread bool
	for _, c := range cats {
		switch {
		case c.CompletionTokens != nil:
		case c.CountError != "" && c.State == snapshot.StateUnknown:
			unread = true
		default:
			yet = true
		}
	}
	switch {
	case yet && unread:
		return "some categories not added up yet, some cannot be read"
	case unread:
		return "some categories cannot be read"
	}
	return "some categories not added up yet"
}

// tokensText is a row's completion tokens, against its budget and with
// the cap that comes first when the budget does.
func tokensText(c snapshot.Category) string {
	t := "-"
	if c.CompletionTokens != nil {
		t = fmt.Sprint(*c.CompletionTokens)
	}
	if c.TokenBudget > 0 {
		t += fmt.Sprintf("/%d", c.TokenBudget)
		if c.CappedBy == snapshot.CapTokens {
			t += " (budget first)"
		}
	}
	return t
}

func fmtETA(s *float64) string {
	if s == nil {
		return "-"
	}
	return snapshot.FormatETA(s)
}

// printGate prints each category's training-readiness gate (parse.JudgeGate),
// a line each below the table: its eight columns stay as scripts read them.
func printGate(out io.Writer, cats []snapshot.Category, safe func(string) string) {
	head := false
	for _, c := range cats {
		if c.Gate == nil {
			continue
		}
		if !head {
			fmt.Fprintln(out, "training gate:")
			head = true
		}
		fmt.Fprintf(out, "  %s: %s\n", safe(c.Name), c.Gate.Text())
	}
}

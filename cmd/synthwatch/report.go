package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/report"
)

// digestScript finds the deployed binary as a launch does, else, with no
// --worker-bin, the host agent a poll installed (when it passes the
// launcher's StrictModes check), and runs its digest; every argument is a
// positional parameter (remote/host/digest.sh).
var digestScript = remote.HostScript("digest.sh")

const noBinary = "synthwatch-report: no synthwatch binary on the host"

// digestTimeout bounds the host's digest: minutes for a root of many GB.
const digestTimeout = 10 * time.Minute

func newReportCmd() *cobra.Command {
	var f hostFlags
	var o digestFlags
	var asJSON bool
	var htmlFile string
	cmd := &cobra.Command{
		Use:   "report [flags] [user@]host[:port]",
		Short: "A report of the night: what finished, what is left, incidents and throughput by hour",
		Long: "report runs `synthwatch digest` with the binary deployed on the host, over one exec, so only its summary of a few " +
			"kilobytes crosses the link, and renders it: a one-screen summary, --json, or --html FILE (one self-contained page " +
			"with charts). It needs no dashboard to have watched the night. --local ROOT digests a root on this machine." + exitCodesHelp,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && htmlFile != "" {
				return usageErr(errors.New("give --json or --html, not both"))
			}
			if _, err := o.options(time.Now()); err != nil {
				return usageErr(err)
			}
			return f.onHost(cmd, args, false, func(ctx context.Context, h remote.Host, name string) error {
				if !cmd.Flags().Changed("stall") && f.set.StallAfter > 0 {
					o.stall = f.set.StallAfter // stall_after as status and the dashboard have it (flag, env, config.toml)
				}
				s, wire, err := fetchDigest(ctx, h, name, &f, &o)
				if (err != nil || len(s.Categories) == 0) && ctx.Err() == nil {
					// the root is checked only when the digest found nothing
					// in it: checked first, its round trips (an SFTP session
					// and a stat, 4 at 150 ms) came before the digest's. A
					// root that is none says so; a check the link failed
					// leaves the digest's own error
					var re *rootError
					if rerr := f.checkRoot(ctx, h, name); errors.As(rerr, &re) || rerr != nil && err == nil {
						return rerr
					}
				}
				if err != nil {
					return err
				}
				if path := f.historyPath(name); historyIncidents(s, path) > 0 {
					s.Notes = append(s.Notes, "the laptop asleep and the link down come from this machine's dashboard history ("+path+"): the host cannot see them")
				}
				where := name + ":" + f.root
				out := cmd.OutOrStdout()
				switch {
				case asJSON:
					enc := json.NewEncoder(termSafe{out})
					enc.SetIndent("", "  ")
					return enc.Encode(jsonReport{Summary: s, LinkBytes: wire})
				case htmlFile != "":
					var b bytes.Buffer
					if err := report.HTML(&b, s, where); err != nil {
						return err
					}
					if err := os.WriteFile(htmlFile, b.Bytes(), 0o644); err != nil {
						return fmt.Errorf("report: %w", err)
					}
					fmt.Fprintf(out, "wrote %s (%d KB)\n", htmlFile, (b.Len()+1023)/1024)
					return nil
				}
				w := int64(-1)
				if wire != nil {
					w = *wire
				}
				return report.Text(out, s, where, w)
			})
		},
	}
	f.add(cmd)
	o.add(cmd, false)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON (intervals, incidents, runs, ...)")
	cmd.Flags().StringVar(&htmlFile, "html", "", "write a self-contained HTML report to this file")
	return cmd
}

// jsonReport is --json: the host's summary and what the link carried for it.
type jsonReport struct {
	*digest.Summary
	LinkBytes *int64 `json:"link_bytes,omitempty"`
}

// wirer is a host that counts the bytes of its link (remote.SSH).
type wirer interface{ Wire() remote.WireStats }

// fetchDigest digests the root: in this process for --local, else with the
// host's deployed binary over one exec. wire is the bytes that exec moved
// both ways, nil for --local.
func fetchDigest(ctx context.Context, h remote.Host, name string, f *hostFlags, o *digestFlags) (*digest.Summary, *int64, error) {
	if f.local != "" {
		opts, err := o.options(time.Now())
		if err != nil {
			return nil, nil, usageErr(err)
		}
		opts.Root = f.root
		s, err := digest.Build(opts)
		return s, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, digestTimeout)
	defer cancel()
	var w0 remote.WireStats
	wh, counts := h.(wirer)
	if counts {
		w0 = wh.Wire()
	}
	keep := "keep" // the digest keeps the records' stamps in the host's cache, unless told never to write there
	if f.noInstall {
		keep = "no-keep"
	}
	argv := append([]string{"sh", "-c", digestScript, "synthwatch-report", f.workerBin, keep}, o.args(f.root)...)
	r, err := h.Exec(ctx, argv...)
	if err != nil {
		return nil, nil, fmt.Errorf("report: run the digest on %s: %w", name, err)
	}
	stderr := parse.SanitizeLine(bytes.TrimSpace(r.Stderr), 600)
	switch {
	case r.ExitCode == 127 && strings.Contains(stderr, noBinary):
		return nil, nil, fmt.Errorf("report: %s: deploy it with:  %s  (or point --worker-bin at it)",
			strings.TrimPrefix(stderr, "synthwatch-report: "), f.command("deploy", name))
	case r.ExitCode != 0 && strings.Contains(stderr, `unknown command "digest"`):
		return nil, nil, fmt.Errorf("report: the synthwatch on %s is older and has no digest: update it with:  %s", name, f.command("deploy", name))
	case r.ExitCode != 0:
		return nil, nil, fmt.Errorf("report: the digest on %s failed (exit %d): %s", name, r.ExitCode, stderr)
	}
	var s digest.Summary
	if err := json.Unmarshal(r.Stdout, &s); err != nil {
		return nil, nil, fmt.Errorf("report: the digest on %s printed no summary (%d bytes): %w", name, len(r.Stdout), err)
	}
	if s.Schema != digest.Schema {
		return nil, nil, fmt.Errorf("report: the digest on %s speaks schema %d, this build %d: update it with:  %s", name, s.Schema, digest.Schema, f.command("deploy", name))
	}
	var wire *int64
	if counts {
		w1 := wh.Wire()
		n := w1.Sent - w0.Sent + w1.Received - w0.Received
		wire = &n
	}
	return &s, wire, nil
}

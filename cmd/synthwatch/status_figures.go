package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// printServerFigures is the server TUIs' figures in text status, below the
// category table (whose lines scripts read): latency percentiles, spec
// decode and KV dtype, a row per replica and the slow one. The words and
// cells are the dashboard's (pipeline's Line, Text and Cells).
func printServerFigures(out io.Writer, sv snapshot.Server) {
	if l := sv.Latency.Line(); l != "" {
		fmt.Fprintln(out, l)
	}
	var facts []string
	if t := sv.Spec.Text(); t != "" {
		facts = append(facts, t)
	}
	if sv.KVCacheDType != "" {
		facts = append(facts, "KV "+parse.SanitizeString(sv.KVCacheDType))
	}
	if len(facts) > 0 {
		fmt.Fprintln(out, strings.Join(facts, "  "))
	}
	if len(sv.Rows) == 0 {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+strings.Join(snapshot.RowHeader, "\t"))
	for _, r := range sv.Rows {
		cells := r.Cells()
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "\t", " ")
		}
		line := "  " + strings.Join(cells, "\t")
		if r.Slow {
			line += "\tslow"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if im := sv.Imbalance; im != nil {
		fmt.Fprintln(out, "imbalance:", strings.ReplaceAll(parse.SanitizeString(im.Reason), "\t", " "))
	}
}

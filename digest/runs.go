package digest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// otherRuns collects the records of run ids beyond maxRuns.
const otherRuns = "(other runs)"

// maxSetting caps one setting's text in Configs.
const maxSetting = 200

// run is the provenance line of id, made on first sight.
func (d *digester) run(id string) *Run {
	if r, ok := d.runs[id]; ok {
		return r
	}
	if len(d.runs) >= maxRuns {
		id = otherRuns
		if r, ok := d.runs[id]; ok {
			return r
		}
	}
	r := &Run{ID: id}
	d.runs[id] = r
	return r
}

// readRuns reads a category's runs.jsonl: when each run started on the
// category and with which server configuration, and the end line a run
// writes when it ends on its own terms.
func (d *digester) readRuns(acc *catAcc, path string) error {
	cat := acc.c.Name
	n, _, err := eachLine(path, func(line []byte, complete bool) {
		rl, err := parse.ParseRunLine(line)
		if err != nil || rl.Run == "" {
			if complete {
				d.s.Notes = appendNote(d.s.Notes, fmt.Sprintf("%s/%s: a line is no run", cat, parse.RunsFile))
			}
			return
		}
		if rl.IsTally() {
			d.tally(cat, rl)
			return
		}
		r := d.run(rl.Run)
		if rl.IsEnd() {
			d.endLine(r, rl)
			return
		}
		acc.prov.runLines = append(acc.prov.runLines, rl)
		if t, err := time.Parse(time.RFC3339Nano, rl.StartedAt); err == nil {
			t = t.In(d.o.Loc)
			r.Started = minTime(r.Started, t)
			d.segs = append(d.segs, segment{run: r.ID, cat: cat, start: t})
		}
		r.PID, r.Version, r.Server = rl.PID, rl.Version, parse.Redact(rl.Server) // a runs.jsonl older than the redaction
		if rl.Snapshot.Known() {
			r.Config = rl.Snapshot.ConfigKey
			d.config(rl.Snapshot)
		} else if r.Config == "" {
			r.Config = parse.ConfigUnknown
		}
	})
	d.count(n, err)
	return err
}

// config keeps a configuration's settings once, as short text.
func (d *digester) config(s parse.ServerSnapshot) {
	if d.s.Configs == nil {
		d.s.Configs = map[string]Config{}
	}
	if _, ok := d.s.Configs[s.ConfigKey]; ok || len(d.s.Configs) >= maxRuns {
		return
	}
	c := Config{}
	for k, v := range s.Info {
		txt := settingText(v)
		if len(txt) > maxSetting {
			txt = txt[:maxSetting] + "…"
		}
		c[k] = txt
	}
	d.s.Configs[s.ConfigKey] = c
}

func byCategory(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d %s", m[n], n)
	}
	return strings.Join(parts, ", ")
}

// appendNote adds a note once; notes are few and short.
func appendNote(notes []string, n string) []string {
	for _, x := range notes {
		if x == n {
			return notes
		}
	}
	if len(notes) >= 20 {
		return notes
	}
	return append(notes, n)
}

// settingText is a setting as a person reads it: JSON numbers come as
// float64, and 1048576 must not read 1.048576e+06.
func settingText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

package digest

import (
	"fmt"
	"sort"
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

// readRuns reads a category's runs.jsonl: when each run started there and
// with which server configuration.
func (d *digester) readRuns(cat, path string) error {
	n, _, err := eachLine(path, func(line []byte, complete bool) {
		rl, err := parse.ParseRunLine(line)
		if err != nil || rl.Run == "" {
			if complete {
				d.s.Notes = appendNote(d.s.Notes, fmt.Sprintf("%s/%s: a line is no run", cat, parse.RunsFile))
			}
			return
		}
		r := d.run(rl.Run)
		if t, err := time.Parse(time.RFC3339Nano, rl.StartedAt); err == nil {
			t = t.In(d.o.Loc)
			r.Started = minTime(r.Started, t)
		}
		r.PID, r.Version, r.Server = rl.PID, rl.Version, rl.Server
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
		txt := fmt.Sprint(v)
		if len(txt) > maxSetting {
			txt = txt[:maxSetting] + "…"
		}
		c[k] = txt
	}
	d.s.Configs[s.ConfigKey] = c
}

// runIncidents are the runs starting, from runs.jsonl, and ending, at their
// last record (the worker log has no times). The run worker.json names as
// alive has not ended.
func (d *digester) runIncidents() {
	for _, r := range d.s.Runs {
		if r.ID == "" || r.ID == otherRuns {
			continue
		}
		if r.Started != nil && d.inWindow(*r.Started) {
			d.inc.add(Incident{Time: *r.Started, Kind: KindRunStart, Text: fmt.Sprintf("run %s started (pid %d, config %s)", r.ID, r.PID, r.Config)})
		}
		live := d.worker != nil && d.worker.PID == r.PID && r.PID != 0 && d.s.Worker.State != parse.WorkerDone &&
			d.s.Worker.State != parse.WorkerStopped && d.s.Worker.State != parse.WorkerFailed
		if r.Last != nil && !live && d.inWindow(*r.Last) {
			d.inc.add(Incident{Time: *r.Last, Kind: KindRunEnd, Text: fmt.Sprintf("run %s: last record (%d records: %s)", r.ID, r.Records, byCategory(r.ByCategory))})
		}
	}
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

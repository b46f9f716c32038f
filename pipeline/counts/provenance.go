package counts

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// noteRun keeps one runs.jsonl line.
func (c *catState) noteRun(r parse.RunLine) {
	for _, x := range c.runLines {
		if x.Run == r.Run {
			return
		}
	}
	c.runLines = append(c.runLines, r)
}

// newRuns are the categories whose tally holds records of a run their
// runs.jsonl has not shown (a worker started since it was read): this poll
// reads it again, once per such run, not a minute later at the next full
// poll.
func (k *Set) newRuns() map[*catState]bool {
	var due map[*catState]bool
	for _, c := range k.cats {
		if c.newRun() {
			if due == nil {
				due = map[*catState]bool{}
			}
			due[c] = true
		}
	}
	return due
}

func (c *catState) newRun() bool {
	due := false
	for run := range c.tok.sum.byRun {
		if run == "" || c.runsAsked[run] || slices.ContainsFunc(c.runLines, func(r parse.RunLine) bool { return r.Run == run }) {
			continue
		}
		if c.runsAsked == nil {
			c.runsAsked = map[string]bool{}
		}
		c.runsAsked[run], due = true, true
	}
	return due
}

// provenance sets v's Configs and Runs from runs.jsonl and the tally,
// when the tally covers the file (the counts would be short otherwise);
// records of no run are placed in eras (eras.go).
func provenance(c *catState, v *snapshot.Category, eras []parse.Era) {
	labels := parse.ConfigLabels(c.runLines)
	complete := c.known && c.tok.complete()
	byRun := c.tok.sum.byRun
	for _, r := range c.runLines {
		info := snapshot.RunInfo{Run: r.Run, PID: r.PID, StartedAt: r.StartedAt, Version: r.Version, Server: r.Server,
			Config: snapshot.UnknownConfig}
		if r.Snapshot.Known() {
			info.Config, info.ConfigKey, info.Args = labels[r.Snapshot.ConfigKey], r.Snapshot.ConfigKey, serverArgs(r.Snapshot.Info)
		}
		if complete {
			rt := byRun[r.Run]
			info.Records, info.Tokens, info.TokensUnknown = &rt.Records, &rt.Tokens, rt.Unknown
		}
		v.Runs = append(v.Runs, info)
	}
	if !complete {
		return
	}
	runs := make(map[string]parse.Tally, len(byRun))
	for run, rt := range byRun {
		runs[run] = rt
	}
	v.Configs = parse.ConfigCounts(parse.ConfigFacts{Runs: c.runLines, ByRun: runs, Eras: eras, Times: c.tok.sum.times})
}

// serverArgs is the server's configuration as one line, keys sorted.
func serverArgs(info map[string]any) string {
	keys := make([]string, 0, len(info))
	for k := range info {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", k, info[k])
	}
	return parse.SanitizeString(b.String())
}

// KVDtype is the KV cache dtype of the newest run the worker recorded
// (runs.jsonl's server_info: kv_cache_dtype, resolved when "auto").
func (k *Set) KVDtype() string {
	var newest parse.RunLine
	for _, c := range k.cats {
		for _, r := range c.runLines {
			if r.Snapshot.Known() && r.StartedAt >= newest.StartedAt {
				newest = r
			}
		}
	}
	info := newest.Snapshot.Info
	if info == nil {
		return ""
	}
	kv, _ := info["kv_cache_dtype"].(string)
	if res, ok := info["kv_cache_dtype_resolved"].(string); ok && (kv == "" || kv == "auto") {
		kv = res
	}
	return kv
}

// RunsOf is the run lines of the category named cat (none when unknown).
func (k *Set) RunsOf(cat string) []parse.RunLine {
	if c, ok := k.cats[cat]; ok {
		return c.runLines
	}
	return nil
}

// foldRuns reads new runs.jsonl lines and notes each server configuration.
func (c *catState) foldRuns(up remote.TailUpdate) {
	for _, l := range up.Lines {
		r, err := parse.ParseRunLine([]byte(l.Text))
		if err == nil && r.IsTally() && r.Run != "" {
			c.tallies.Note(r.Run, *r.Tally) // what the run wasted and drew (spend.go)
			continue
		}
		if err == nil && r.IsEnd() {
			continue // how a run ended is the night report's, not a configuration
		}
		if err == nil && r.Run != "" {
			c.noteRun(r)
		}
		// A snapshot that failed (parse.ConfigUnknown; before that, a hash
		// of an empty info) says nothing about the configuration: it is not one.
		if err != nil || !r.Snapshot.Known() {
			continue
		}
		snap := r.Snapshot
		if c.configDesc == nil {
			c.configDesc = map[string]string{}
		}
		if _, seen := c.configDesc[snap.ConfigKey]; !seen {
			c.configs = append(c.configs, snap.ConfigKey)
			kv := fmt.Sprint(snap.Info["kv_cache_dtype"])
			if res, ok := snap.Info["kv_cache_dtype_resolved"]; ok {
				kv += "(" + fmt.Sprint(res) + ")"
			}
			c.configDesc[snap.ConfigKey] = fmt.Sprintf("kv_cache_dtype=%s quantization=%v model=%v",
				kv, snap.Info["quantization"], snap.Info["model_path"])
		}
	}
}

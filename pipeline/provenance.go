package pipeline

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// RunInfo is one run of the worker on a category, from runs.jsonl, with
// the records it wrote (from the records' own "run").
type RunInfo struct {
	Run       string `json:"run"`
	PID       int    `json:"pid,omitempty"`
	StartedAt string `json:"started_at,omitempty"`
	Version   string `json:"version,omitempty"`
	Server    string `json:"server,omitempty"`
	Config    string `json:"config"`               // a short name: fp8-kv, bf16, … or "unknown config"
	ConfigKey string `json:"config_key,omitempty"` // the worker's hash of the server's arguments
	Args      string `json:"server_args,omitempty"`
	Records   *int64 `json:"records"` // null while the tally does not cover the file
	Tokens    *int64 `json:"tokens"`
	// TokensUnknown: its records whose tokens are unknown (not in Tokens)
	TokensUnknown int64 `json:"tokens_unknown_records,omitempty"`
}

// ConfigCount is how many of a category's records one server
// configuration made.
type ConfigCount struct {
	Config    string `json:"config"`
	ConfigKey string `json:"config_key,omitempty"`
	// Inferred: records of no run, placed by their own time in the era
	// of the server log's start line (parse.PlaceRecords) whose
	// settings Args are; every view says parse.InferredFromLog
	Inferred bool   `json:"inferred,omitempty"`
	Args     string `json:"server_args,omitempty"`
	Records  int64  `json:"records"`
	Tokens   int64  `json:"tokens"`
	// TokensUnknown: its records whose tokens are unknown (not in Tokens)
	TokensUnknown int64 `json:"tokens_unknown_records,omitempty"`
}

// UnknownConfig names records no run of runs.jsonl accounts for: written
// by the old script (no "run"), or by a run whose server could not say.
const UnknownConfig = "unknown config"

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
func (k *counts) newRuns() map[*catState]bool {
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
func provenance(c *catState, v *Category, eras []parse.Era) {
	labels := configLabels(c.runLines)
	complete := c.known && c.tok.complete()
	byRun := c.tok.sum.byRun
	seen := map[string]bool{}
	counts := map[string]*ConfigCount{}
	var order []string
	add := func(label, key string, r runTally) {
		cc, ok := counts[label]
		if !ok {
			cc = &ConfigCount{Config: label, ConfigKey: key}
			counts[label] = cc
			order = append(order, label)
		}
		cc.Records += r.records
		cc.Tokens += r.tokens
		cc.TokensUnknown += r.unknown
	}
	for _, r := range c.runLines {
		info := RunInfo{Run: r.Run, PID: r.PID, StartedAt: r.StartedAt, Version: r.Version, Server: r.Server,
			Config: UnknownConfig}
		if r.Snapshot.Known() {
			info.Config, info.ConfigKey, info.Args = labels[r.Snapshot.ConfigKey], r.Snapshot.ConfigKey, serverArgs(r.Snapshot.Info)
		}
		if complete {
			rt := byRun[r.Run]
			info.Records, info.Tokens, info.TokensUnknown = &rt.records, &rt.tokens, rt.unknown
			seen[r.Run] = true
			add(info.Config, info.ConfigKey, rt)
		}
		v.Runs = append(v.Runs, info)
	}
	if !complete {
		return
	}
	var rest runTally
	for run, rt := range byRun {
		if !seen[run] && (run != "" || len(eras) == 0) {
			rest.add(rt) // with no start line known, nothing is placed
		}
	}
	var p parse.Placement
	if len(eras) > 0 {
		p = parse.PlaceRecords(eras, c.tok.sum.times)
	}
	for _, e := range p.Eras {
		key := e.Label + " " + parse.InferredFromLog // apart from a run's own e.Label
		add(key, "", tallyOf(e.Tally))
		counts[key].Config, counts[key].Inferred, counts[key].Args = e.Label, true, e.Settings
	}
	rest.add(tallyOf(p.Outside))
	add(UnknownConfig, "", rest)
	add(parse.ConfigNoTime, "", tallyOf(p.NoTime))
	add(parse.ConfigNotPlaced, "", tallyOf(p.NotPlaced))
	for _, l := range order {
		if cc := counts[l]; cc.Records > 0 {
			v.Configs = append(v.Configs, *cc)
		}
	}
}

// configLabels names each configuration by its KV cache dtype, the
// difference users look for; two configurations with one dtype are told
// apart by their key.
func configLabels(runs []parse.RunLine) map[string]string {
	out := map[string]string{}
	used := map[string]string{}
	for _, r := range runs {
		key := r.Snapshot.ConfigKey
		if !r.Snapshot.Known() || out[key] != "" {
			continue
		}
		l := kvLabel(r.Snapshot.Info)
		if k, taken := used[l]; taken && k != key {
			l += "#" + key[:min(6, len(key))]
		}
		used[l], out[key] = key, l
	}
	return out
}

func kvLabel(info map[string]any) string {
	res := ""
	if r, ok := info["kv_cache_dtype_resolved"]; ok {
		res = fmt.Sprint(r)
	}
	return parse.KVLabel(fmt.Sprint(info["kv_cache_dtype"]), res)
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

func tallyOf(t parse.Tally) runTally {
	return runTally{records: t.Records, tokens: t.Tokens, unknown: t.Unknown}
}

// ConfigLine is the row's provenance: "1652 fp8-kv (inferred from the
// server log) · 5348 bf16".
func ConfigLine(cs []ConfigCount) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d %s", c.Records, c.Config)
		if c.Inferred {
			parts[i] += " " + parse.InferredFromLog
		}
	}
	return strings.Join(parts, " · ")
}

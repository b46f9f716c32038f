package parse

import "fmt"

// ConfigCount is how many of a category's records one server
// configuration made.
type ConfigCount struct {
	Config    string `json:"config"`
	ConfigKey string `json:"config_key,omitempty"`
	// Inferred: records of no run, placed by their own time in the era
	// of the server log's start line (PlaceRecords) whose settings Args
	// are; every view says InferredFromLog beside it
	Inferred bool   `json:"inferred,omitempty"`
	Args     string `json:"server_args,omitempty"`
	Records  int64  `json:"records"`
	Tokens   int64  `json:"tokens"`
	// TokensUnknown: its records whose tokens are unknown (not in Tokens)
	TokensUnknown int64 `json:"tokens_unknown_records,omitempty"`
}

// UnknownConfigLabel names records whose configuration nothing tells: a
// run whose server could not say, or records of no run with no era to
// place them in (before the first start line known, or none known).
const UnknownConfigLabel = "unknown config"

// ConfigFacts are what a category's provenance is judged from: its
// runs.jsonl lines, its records per run ("" the records of no run), the
// server's eras and the run-less records' times.
type ConfigFacts struct {
	Runs  []RunLine
	ByRun map[string]Tally
	Eras  []Era
	Times RecordTimes
}

// ConfigCounts is a category's records by configuration, in this order:
// the runs' configurations (runs.jsonl's order), the eras' (inferred),
// unknown config, unplaced (no time), not placed; only those with records.
// With no era known, records of no run are of unknown config, as before
// eras were read.
func ConfigCounts(f ConfigFacts) []ConfigCount {
	labels := ConfigLabels(f.Runs)
	idx := map[string]int{}
	var out []ConfigCount
	add := func(key string, c ConfigCount, t Tally) {
		i, ok := idx[key]
		if !ok {
			i, idx[key] = len(out), len(out)
			out = append(out, c)
		}
		out[i].Records += t.Records
		out[i].Tokens += t.Tokens
		out[i].TokensUnknown += t.Unknown
	}
	seen := map[string]bool{}
	for _, r := range f.Runs {
		if seen[r.Run] {
			continue
		}
		seen[r.Run] = true
		c := ConfigCount{Config: UnknownConfigLabel}
		if r.Snapshot.Known() {
			c = ConfigCount{Config: labels[r.Snapshot.ConfigKey], ConfigKey: r.Snapshot.ConfigKey}
		}
		add(c.Config, c, f.ByRun[r.Run])
	}
	var rest Tally
	for run, t := range f.ByRun {
		if !seen[run] && (run != "" || len(f.Eras) == 0) {
			rest.Add(t)
		}
	}
	var p Placement
	if len(f.Eras) > 0 {
		p = PlaceRecords(f.Eras, f.Times)
	}
	for _, e := range p.Eras {
		add(e.Label+" "+InferredFromLog, ConfigCount{Config: e.Label, Inferred: true, Args: e.Settings}, e.Tally)
	}
	rest.Add(p.Outside)
	add(UnknownConfigLabel, ConfigCount{Config: UnknownConfigLabel}, rest)
	add(ConfigNoTime, ConfigCount{Config: ConfigNoTime}, p.NoTime)
	add(ConfigNotPlaced, ConfigCount{Config: ConfigNotPlaced}, p.NotPlaced)
	kept := out[:0]
	for _, c := range out {
		if c.Records > 0 {
			kept = append(kept, c)
		}
	}
	return kept
}

// ConfigLabels names each configuration of runs by its KV cache dtype
// (KVLabel); two configurations with one dtype are told apart by their key.
func ConfigLabels(runs []RunLine) map[string]string {
	out := map[string]string{}
	used := map[string]string{}
	for _, r := range runs {
		key := r.Snapshot.ConfigKey
		if !r.Snapshot.Known() || out[key] != "" {
			continue
		}
		res := ""
		if v, ok := r.Snapshot.Info["kv_cache_dtype_resolved"]; ok {
			res = fmt.Sprint(v)
		}
		l := KVLabel(fmt.Sprint(r.Snapshot.Info["kv_cache_dtype"]), res)
		if k, taken := used[l]; taken && k != key {
			l += "#" + key[:min(6, len(key))]
		}
		used[l], out[key] = key, l
	}
	return out
}

// ConfigText is a category's provenance in one line: "1,652 fp8-kv
// (inferred from the server log) · 5,348 bf16".
func ConfigText(cs []ConfigCount) string {
	var b []byte
	for i, c := range cs {
		if i > 0 {
			b = append(b, " · "...)
		}
		b = fmt.Appendf(b, "%s %s", Thousands(c.Records), c.Config)
		if c.Inferred {
			b = append(b, ' ')
			b = append(b, InferredFromLog...)
		}
	}
	return string(b)
}

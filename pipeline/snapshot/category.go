package snapshot

import (
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
)

// TokensFromRecords: the tokens were added up from the records themselves.
const TokensFromRecords = "records"

// Caps of a category.
const (
	CapRecords = "records"
	CapTokens  = "tokens"
)

// SourceCheck is one source that disagrees with the file beyond what a
// poll explains. The file is the authority: it holds the records; the
// others only report on it, and Why says why this one lags.
type SourceCheck struct {
	Source    string `json:"source"` // log | worker.json
	Says      int64  `json:"says"`
	File      int64  `json:"file"` // DONE, from raw_responses.jsonl
	Authority string `json:"authority"`
	Why       string `json:"why"`
}

// EventGateBelow is the timeline's kind for a pass rate fallen below the floor.
const EventGateBelow = "gate_below"

// GateBelowText is the event's words: "B2: pass rate 82.0% below 90%
// (820 of 1,000 pass)".
func GateBelowText(name string, g parse.GateVerdict) string {
	return fmt.Sprintf("%s: pass rate %s below %s (%s of %s pass)", name, parse.Percent(g.Rate), parse.Percent(g.Floor), parse.Thousands(g.Pass), parse.Thousands(g.Examined))
}

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
	// Tally is what the run generated, wasted and drew on the category:
	// its last tally line (pipeline/counts/spend.go); absent when it left none
	Tally *parse.RunTally `json:"tally,omitempty"`
}

// ConfigCount is how many of a category's records one server
// configuration made (parse.ConfigCounts).
type ConfigCount = parse.ConfigCount

// UnknownConfig names records no run of runs.jsonl accounts for and no
// era of the server log takes.
const UnknownConfig = parse.UnknownConfigLabel

// ConfigLine is the row's provenance: "1,652 fp8-kv (inferred from the
// server log) · 5,348 bf16" (parse.ConfigText).
func ConfigLine(cs []ConfigCount) string { return parse.ConfigText(cs) }

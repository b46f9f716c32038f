package pipeline

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// counts is the categories' part of a poll: the manifest and prepared/*/
// that name them, the line counts of their files with the tokens of the
// bytes those counts read (and the sums the host ran for the rest), and
// their runs.jsonl; with what each category's log lines and worker.json
// say of it, kept per category (catState) between polls.
type counts struct {
	lay        parse.Layout
	history    int           // samples kept per category
	stallAfter time.Duration // Options.StallAfter: a log rate older than it is none
	tl         *Timeline     // category_done events give a class its rate

	cats        map[string]*catState
	order       []string
	manifest    parse.Manifest
	haveMan     bool
	manErr      error              // why pipeline.toml could not be read or parsed (nil: read, or none)
	thens       map[string]*tokJob // by category: the token sums the batch's counts on the host ran
	agentCounts bool               // the counters count on the host above agentRemoteAbove
	classRates  map[string]float64 // newest measured rate per class (per minute)
}

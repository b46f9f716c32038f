package counts

import (
	"context"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// The Set's entry points, in a poll's order: the Watcher plans (Plan,
// TokenJobs, SpanArgv), asks its share of the batch (AskFind, AskEach,
// Files, AskCounts, AskSums), reads what the batch did not answer
// (Discover, ReadSums, ReadSpans), folds (Fold, FoldTokens, FoldSpans,
// FoldRuns, FoldLogLine), judges (Judge, CrossCheck) and views (View,
// Shown, ETA). A part is never handed another part: only values.

// Config is what a Set needs from the Watcher's options.
type Config struct {
	Layout     parse.Layout
	History    int           // samples kept per category
	StallAfter time.Duration // Options.StallAfter
	OnePoll    bool          // a one-shot status (Options.OnePoll)
	// SumWithin: the dashboard's time budget for each answer of the
	// holes' sums by the agent (0: whole sums, as a one-shot command needs)
	SumWithin time.Duration
	Timeline  *timeline.Timeline
	// PromptsOnHost: prompts.jsonl is counted on the host, where a count
	// there costs no exec of its own (the fallback's batch, the agent);
	// not on this machine's own root (remote.Local), whose count on the
	// host is a count.sh a file
	PromptsOnHost bool
}

// New is the categories' part before its first poll.
func New(c Config) *Set {
	return &Set{lay: c.Layout, history: c.History, stallAfter: c.StallAfter, onePoll: c.OnePoll, within: c.SumWithin, tl: c.Timeline, promptsOnHost: c.PromptsOnHost, cats: map[string]*catState{}}
}

// Len is how many categories are known.
func (k *Set) Len() int { return len(k.cats) }

// Known says a category of that name is known.
func (k *Set) Known(name string) bool { return k.cats[name] != nil }

// Plan starts a poll and says what the categories ask of it besides their
// files: the runs.jsonl it reads though it is not full (newRuns, for its
// request and its reads alike); the holes' token sums (TokenJobs), a
// slice of them when the fallback reads (byFallback); and the records'
// spans (SpanArgv). agentAgain: the agent answered the last poll too, so
// what the fallback's awk summed before it is summed again (Reexamine).
func (k *Set) Plan(byFallback, agentAgain bool) (jobs []*Job, spans []string) {
	k.runsDue = k.newRuns() // before Reexamine empties a tally's runs
	budget := int64(-1)
	if byFallback {
		budget = FallbackSumPerPoll // the fallback's awk sums a slice a poll
	}
	if agentAgain {
		k.Reexamine()
	}
	return k.TokenJobs(budget), k.SpanArgv()
}

// Files are this poll's tails and counters of the categories, in order:
// raw_responses.jsonl and errors.jsonl, on a full poll prompts.jsonl, and
// runs.jsonl when full or due (Plan).
func (k *Set) Files(full bool) (tails []*remote.Tail, counters []*remote.Counter) {
	for _, n := range k.order {
		c := k.cats[n]
		counters = append(counters, c.raw, c.errs)
		if full {
			counters = append(counters, c.prompts)
		}
		if full || k.runsDue[c] {
			tails = append(tails, c.runs) // written once per worker start
		}
	}
	return tails, counters
}

// AskFind asks in b what Discover reads: pipeline.toml and its trust
// until it is read, and on a full poll the category folders.
func (k *Set) AskFind(b *remote.Batch, full bool) FindAsks {
	var a FindAsks
	l := k.lay
	if !k.haveMan {
		a.man = b.Cat(l.Manifest(), 1<<20)
		a.trust = b.Exec(manifestTrustArgv(l.Manifest())...) // asked if it names a server: no round trip after
	}
	if full {
		pats := parse.CategoryGlobs(l.Root) // prompts.jsonl's, raw_responses.jsonl's
		for i, name := range []string{parse.PromptsFile, parse.RawFile} {
			a.globs = append(a.globs, b.Glob(pats[i], l.Prepared(), name))
		}
	}
	return a
}

// AskEach asks, while no category is known, every category folder's
// files at once (a first attach); byAgent: the holes its count leaves
// summed in the same answer by the Go agent, whole for a one-shot status,
// within FirstSumWithin for a dashboard (its first table waits no more
// for a night no dashboard watched, and has its tokens at once for one
// the agent summed before).
func (k *Set) AskEach(b *remote.Batch, byAgent bool) *remote.ExecAsk {
	if len(k.cats) > 0 {
		return nil
	}
	c := k.newCat("")
	b.Each(k.lay.Prepared(), []*remote.Tail{c.runs}, []*remote.Counter{c.raw, c.errs, c.prompts})
	switch {
	case !byAgent:
	case k.onePoll:
		return b.Exec(k.coldSumArgv(c.raw.RemoteAbove, 0)...)
	case k.within > 0:
		return b.Exec(k.coldSumArgv(c.raw.RemoteAbove, min(k.within, FirstSumWithin))...)
	}
	return nil
}

// AskSums asks in b for the host's sums of jobs (nil: none); byAgent:
// the Go agent answers, within the Set's time budget if it has one.
func (k *Set) AskSums(b *remote.Batch, jobs []*Job, byAgent bool) *remote.ExecAsk {
	if len(jobs) == 0 {
		return nil
	}
	var within time.Duration
	if byAgent {
		within = k.within
	}
	return b.Exec(tokenArgv(jobs, within)...)
}

// AgentRemoteAbove: with the agent, a count of more new bytes than this
// runs on the host in the same request (the bytes never cross the link).
const AgentRemoteAbove = 1 << 10

// CountOnHost sets where the counts run: on the host above AgentRemoteAbove
// new bytes when the agent answers this poll, else above the Counter's
// default (a count on the host then costs an exec of its own).
func (k *Set) CountOnHost(steady bool) {
	if !steady && !k.agentCounts {
		return // as they are (a test may have set them)
	}
	k.agentCounts = steady
	above := remote.NewCounter("").RemoteAbove
	if steady {
		above = AgentRemoteAbove
	}
	for _, c := range k.cats {
		for _, n := range []*remote.Counter{c.raw, c.errs, c.prompts} {
			if n != c.prompts || !k.promptsOnHost { // else always (newCat)
				n.RemoteAbove = above
			}
		}
	}
}

// AskCounts asks for the counters' line counts; in a steady poll a
// category's count also sums its records' tokens on the host.
func (k *Set) AskCounts(b *remote.Batch, counters []*remote.Counter, steady bool) {
	then := map[*remote.Counter]*catState{}
	if steady {
		k.thens = map[string]*Job{}
		for _, c := range k.cats {
			then[c.raw] = c // from the tally's start: through any hole too
		}
	}
	for _, n := range counters {
		if c := then[n]; c != nil && !(k.within > 0 && c.tok.job != nil) {
			// (with a time budget, a hole this poll's job sums is summed
			// within it: the count's then would sum it whole)
			// a count on the host sums the counted records' tokens there too
			th := b.CountThen(n, c.tok.start, tokenArgv(nil, 0)...)
			k.thens[c.name] = &Job{path: n.Path, from: c.tok.start, gen: c.tok.gen, then: th}
			continue
		}
		b.Count(n)
	}
}

// Settled says pipeline.toml was read, or cannot be: the servers it lists
// (none for a bad one) are known.
func (k *Set) Settled() bool { return k.haveMan || k.manErr != nil }

// Manifest is pipeline.toml as last read, and whether it was read.
func (k *Set) Manifest() (parse.Manifest, bool) { return k.manifest, k.haveMan }

// ManifestErr says why pipeline.toml could not be used (nil: it could, or
// there is none).
func (k *Set) ManifestErr() error { return k.manErr }

// Sums are the host's answer to a poll's token sums.
type Sums struct {
	res []tokResult
	err error
}

// ReadSums is the host's sums of jobs: the batch's answer (ask), or, when
// it did not answer, an exec of its own.
func ReadSums(ctx context.Context, h remote.Host, jobs []*Job, ask *remote.ExecAsk) Sums {
	if len(jobs) == 0 {
		return Sums{}
	}
	res, err := sumOnHost(ctx, h, jobs, ask)
	return Sums{res, err}
}

// FoldTokens folds the counts' reads and the host's sums of jobs into
// each category's tally.
func (k *Set) FoldTokens(res remote.PollResult, jobs []*Job, s Sums) {
	k.foldTokens(res, jobs, s.res, s.err)
}

// SumHoles sums on the host, now, the records the counts left unread,
// the cold batch's sums (coldSum) first, where a figure cannot wait for
// the next poll: a one-shot status (OnePoll) sums them all, unless the
// fallback read it (byFallback: it counts only, the holes' tokens would
// be the host's awk over every byte of them); a category with a token
// budget is done or not by its tokens, so its own are summed now by
// either reader, not a poll later.
func (k *Set) SumHoles(ctx context.Context, h remote.Host, coldSum *remote.ExecAsk, byFallback bool) {
	var only func(*catState) bool
	cold := func(jobs []*Job) map[*Job]tokResult { return coldSums(coldSum, jobs) }
	switch {
	case k.onePoll && !byFallback:
	case k.budgetUnsummed():
		only = func(c *catState) bool { return c.budget > 0 }
		if coldSum != nil && !byFallback { // the others as below
			k.foldCold(cold, func(c *catState) bool { return c.budget <= 0 })
		}
	case coldSum != nil && !byFallback:
		// a dashboard's first poll: what the agent summed within its
		// budget; the rest the next poll sums, asked at once
		k.foldCold(cold, nil)
		return
	default:
		return
	}
	k.sumHolesNow(ctx, h, cold, only)
}

// Spans are the host's answer to SpanArgv.
type Spans struct {
	out  []byte
	read bool
}

// ReadSpans is argv's answer (nil argv: none asked).
func ReadSpans(ctx context.Context, h remote.Host, argv []string, ask *remote.ExecAsk) Spans {
	if argv == nil {
		return Spans{}
	}
	out, ok := readSpans(ctx, h, argv, ask)
	return Spans{out, ok}
}

// FoldSpans keeps each category's records' span from this poll's answer,
// their zone-less times read in the host's zone, which the tokens' reads
// use too.
func (k *Set) FoldSpans(s Spans, zone *time.Location, now time.Time) {
	k.foldSpans(s.out, s.read, zone, now)
	k.zone = zone
}

// FoldRuns folds this poll's runs.jsonl tails into their categories.
func (k *Set) FoldRuns(tails []remote.TailUpdate) {
	byRuns := make(map[string]*catState, len(k.cats)) // not a scan of the categories per tail: 10,000 of each is 10^8
	for _, c := range k.cats {
		byRuns[c.runs.Path] = c
	}
	for _, up := range tails {
		if c := byRuns[up.Path]; c != nil {
			c.foldRuns(up)
		}
	}
}

// Shown is the categories as this poll judged them, for the parts judged
// after them (not a copy: they only read it).
func (k *Set) Shown() []snapshot.Category { return k.shown }

// Mtimes are the judged categories' files' mtimes, in Shown's order.
func (k *Set) Mtimes() []time.Time { return k.shownAt }

// ETA is the pipeline's ETA as this poll judged it: the whole, or the
// part that is known.
func (k *Set) ETA() (*float64, *snapshot.ETAPart) { return k.eta, k.etaPart }

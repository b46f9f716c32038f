// Package digest sums up a night of the pipeline on the host itself: it
// reads the records' finish times, the server log and runs.jsonl where they
// lie and returns a Summary of a few kilobytes, whatever the files weigh.
// `synthwatch digest` prints it; `synthwatch report` fetches it over one
// exec and renders it. It does file I/O but no network, and imports parse
// and the standard library only.
package digest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Schema is the Summary's version; a report refuses another one.
const Schema = 1

// MaxIntervals bounds the summary's size: --since over --every.
const MaxIntervals = 2000

// Options say what to digest.
type Options struct {
	Root  string
	Since time.Time     // the window's start (rounded down to an interval)
	Now   time.Time     // its end; zero: time.Now()
	Every time.Duration // interval length; zero: one hour
	// StallAfter is the gap in a running category's records that counts
	// as a stall; zero: 10 minutes, the dashboard's default.
	StallAfter time.Duration
	// Loc is the host's zone: the server log and zone-less finished_at
	// times are its wall clock, and intervals are aligned to it. Nil: Local.
	Loc *time.Location
	// Alive says whether process pid lives on the host now (known false:
	// it cannot tell). Nil: not asked, as for a digest of another time;
	// `synthwatch digest` passes ProcAlive.
	Alive func(pid int) (alive, known bool)
	// Writers are the processes that have each of paths open for writing
	// (known false: it cannot tell), for the old script's run, which
	// writes no worker.json. Nil: not asked; `synthwatch digest` passes
	// ProcWriters.
	Writers func(paths ...string) (pids map[string][]int, known bool)
	// Frozen says whether process pid is stopped (SIGSTOP, Ctrl-Z): alive,
	// and writing nothing. Nil: not asked; `synthwatch digest` passes
	// ProcFrozen.
	Frozen func(pid int) bool
	// Started is when process pid started (zero: unknown), the writer's
	// start for when its category became current. Nil: not asked;
	// `synthwatch digest` passes ProcStarted.
	Started func(pid int) time.Time
	// Keep is the folder where the records' stamps are kept between
	// digests (keep.go); "": none kept
	Keep string
}

// Summary is the digest of one window, as `synthwatch digest` prints it.
type Summary struct {
	Schema     int               `json:"schema"`
	Host       string            `json:"host,omitempty"`
	Root       string            `json:"root"`
	Zone       string            `json:"zone"`
	Now        time.Time         `json:"now"`
	Since      time.Time         `json:"since"`
	EverySec   int64             `json:"every_s"`
	Categories []Category        `json:"categories"`
	Intervals  []Interval        `json:"intervals"`
	Incidents  []Incident        `json:"incidents"`
	Dropped    int               `json:"incidents_dropped,omitempty"`
	Runs       []Run             `json:"runs"`
	Configs    map[string]Config `json:"configs,omitempty"`
	Worker     *Worker           `json:"worker,omitempty"`
	// WorkerState is the worker as status calls it (parse.JudgeWorker on
	// what the host holds now, stalled when the category it is on is), and
	// WorkerCategory the category it is or was last on
	WorkerState    string       `json:"worker_state,omitempty"`
	WorkerCategory string       `json:"worker_category,omitempty"`
	Server         ServerTotals `json:"server"`
	Read           ReadStats    `json:"read"`
	Notes          []string     `json:"notes,omitempty"`
	// UntimedPlaced is how many records with no time the intervals'
	// Untimed estimates place, from the server's answers.
	UntimedPlaced int64 `json:"untimed_placed,omitempty"`
	// Capture is the next stage's disk for these records, as status's
	// (parse.ForecastCapture), against the root's free disk now
	Capture *parse.CaptureForecast `json:"capture,omitempty"`
	// Spend is the night's wasted tokens and energy, as status's
	// (parse.NightSpend of the categories')
	Spend  *parse.Spend       `json:"spend,omitempty"`
	byName map[string]*catAcc `json:"-"`
}

// Every is the interval length.
func (s *Summary) Every() time.Duration { return time.Duration(s.EverySec) * time.Second }

// Category is one category's totals: all its records, not just the window's.
type Category struct {
	Name    string `json:"name"`
	Records int64  `json:"records"` // every record, duplicates too
	// Done is DONE as status says it (parse.JudgeDone): unique records
	// where worker.json measured them, else Records; DoneNote says why
	// when it is not the line count
	Done     int64  `json:"done"`
	DoneNote string `json:"done_note,omitempty"`
	Tokens   int64  `json:"tokens"`
	// TokensUnknown: records whose tokens are unknown (not in Tokens, never 0)
	TokensUnknown int64  `json:"tokens_unknown_records,omitempty"`
	NoTime        int64  `json:"no_time,omitempty"`   // records without a readable finished_at
	BadLines      int64  `json:"bad_lines,omitempty"` // lines that are not one JSON object
	Prompts       int64  `json:"prompts"`
	Target        int64  `json:"target"` // parse.JudgeTarget's, as status's
	TargetSource  string `json:"target_source,omitempty"`
	TargetNote    string `json:"target_note,omitempty"` // the worker log's figure, where it disagrees
	TokenBudget   int64  `json:"token_budget,omitempty"`
	// Configs: its records by server configuration, as status's
	// (parse.ConfigCounts)
	Configs []parse.ConfigCount `json:"configs,omitempty"`
	// OverCap: the caps it is past, as status's (parse.OverCaps)
	OverCap []parse.OverCap `json:"over_cap,omitempty"`
	// Outcomes: its records by how they ended, as status's
	Outcomes *parse.Outcomes `json:"outcomes,omitempty"`
	// Spend: its wasted tokens and energy from the runs' tallies, as
	// status's (parse.SpendOf)
	Spend *parse.Spend `json:"spend,omitempty"`
	// Gate: its training-readiness gate, as status's (parse.JudgeGate),
	// and when its pass rate, followed record by record in the file's
	// order, last fell below the floor (the dashboard's gate_below event;
	// nil when it never did or the record had no time)
	Gate        *parse.GateVerdict `json:"gate,omitempty"`
	GateBelowAt *time.Time         `json:"gate_below_at,omitempty"`
	// State and Reason are status's words for it (parse.JudgeCategory and
	// the stall, judge.go)
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Error is why a file of the category could not be read (a directory,
	// a FIFO, permission denied): its figures are then unknown, and the
	// rest of the report stands.
	Error string `json:"error,omitempty"`
	// InWindow are the window's records; RatePerHour is their rate over the
	// span they cover (first to last), 0 with fewer than two.
	InWindow    int64      `json:"in_window"`
	RatePerHour float64    `json:"rate_per_h,omitempty"`
	ETASec      *float64   `json:"eta_s,omitempty"`
	First       *time.Time `json:"first,omitempty"`
	Last        *time.Time `json:"last,omitempty"`
}

// Left is what the category still has to do (0 when done or over).
func (c Category) Left() int64 { return parse.Left(c.Done, c.Target, c.State) }

// Interval is one step of the window, from Start for Every.
type Interval struct {
	Start       time.Time         `json:"start"`
	Categories  map[string]Counts `json:"categories,omitempty"`
	Throughput  *Throughput       `json:"throughput,omitempty"`
	Retractions int               `json:"retractions,omitempty"`
	// Sources say where its records' times came from: records per field
	// (parse.FinishedField, or one of parse.TimeFields).
	Sources map[string]int64 `json:"sources,omitempty"`
	// Answers are the server log's 200 answers to completion requests
	// (its access lines); Untimed the estimate of the records with no time
	// of their own that belong here: Answers less the records placed by
	// their own times (see untimed).
	Answers int64 `json:"server_answers,omitempty"`
	Untimed int64 `json:"untimed_estimate,omitempty"`
}

// Counts are one category's records and completion tokens in an interval.
type Counts struct {
	Records       int64 `json:"records"`
	Tokens        int64 `json:"tokens"`
	TokensUnknown int64 `json:"tokens_unknown_records,omitempty"` // not in Tokens
}

// Throughput is the server's generation throughput (token/s) from its
// timestamped Decode batch (or vLLM stats) lines in an interval. With DP
// attention each rank prints its own line: Mean and Max are summed over ranks.
type Throughput struct {
	Mean    float64 `json:"mean"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
}

// Incident kinds.
const (
	KindOutage     = "outage"      // the server down: from the first failed witness to the next ready line
	KindRestart    = "restart"     // the server ready again after a start with no failure logged
	KindStart      = "start"       // the server's first ready line in the log
	KindHealthFail = "health_fail" // a failed health check that no outage followed
	KindHang       = "hang"        // the server alive but making no progress (a watchdog's word)
	KindStall      = "stall"       // a category with no records for more than StallAfter while current
	KindWait       = "wait"        // the worker waiting on a server that does not answer
	// the laptop asleep and the link down: only the dashboard on the laptop
	// sees them; `synthwatch report` adds them from its history there
	KindSlept    = "slept"
	KindLinkDown = "link_down"
	KindRunStart = "run_start"
	KindRunEnd   = "run_end"
)

// Incident is one thing worth a line in the report, at the time its own
// source gives (the server log's clock, a record's finished_at, runs.jsonl).
// An outage or a stall has a length: End, or Still when it had not ended
// when the digest ran; a moment (a run's start) has neither.
type Incident struct {
	Time     time.Time  `json:"time"`
	End      *time.Time `json:"end,omitempty"`
	Still    bool       `json:"still,omitempty"`
	Kind     string     `json:"kind"`
	Text     string     `json:"text"`
	Category string     `json:"category,omitempty"`
	Run      string     `json:"run,omitempty"`
	// Lost is how many records the time around it (from 30 minutes before
	// to 30 minutes after) fell short of its baseline: the category's own
	// rate for a stall, the whole job's for the rest. Nil: no baseline.
	Lost *int64 `json:"lost,omitempty"`
}

// Span is how long the incident lasted, up to now when it still goes on;
// 0 for a moment.
func (in Incident) Span(now time.Time) time.Duration {
	switch {
	case in.End != nil:
		return in.End.Sub(in.Time)
	case in.Still:
		return now.Sub(in.Time)
	}
	return 0
}

// Run is one line of the provenance table: a worker run and what it wrote.
type Run struct {
	ID         string           `json:"id"` // "" for records with no run (older tools)
	Started    *time.Time       `json:"started,omitempty"`
	PID        int              `json:"pid,omitempty"`
	Version    string           `json:"version,omitempty"`
	Server     string           `json:"server,omitempty"`
	Config     string           `json:"config,omitempty"` // a key of Summary.Configs, or parse.ConfigUnknown
	Records    int64            `json:"records"`
	ByCategory map[string]int64 `json:"by_category,omitempty"`
	First      *time.Time       `json:"first,omitempty"`
	Last       *time.Time       `json:"last,omitempty"`
	// End is how the run ended (EndFinished …); EndHow what says so (its
	// own end line, or "inferred: …"); EndCause the signal or the error.
	End      string `json:"end"`
	EndHow   string `json:"end_how"`
	EndCause string `json:"end_cause,omitempty"`
	// EndAt is the time of the run's last evidence: its end line, its last
	// record, worker.json, the kill note.
	EndAt *time.Time `json:"end_at,omitempty"`

	ended   *time.Time    // from its end line
	endLine parse.RunLine // its end line
}

// Config is a server configuration's settings, as runs.jsonl recorded them.
type Config map[string]string

// Worker is what worker.json said when the digest ran.
type Worker struct {
	PID       int       `json:"pid"`
	State     string    `json:"state"`
	Category  string    `json:"category,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ServerTotals are the server log's figures for the whole window.
type ServerTotals struct {
	Lines       int64   `json:"lines"`
	Undated     int64   `json:"undated,omitempty"` // batch lines with no date (old SGLang): not placed in time
	Crashes     int     `json:"crashes"`
	Restarts    int     `json:"restarts"`
	Retractions int     `json:"retractions"`
	MeanTokS    float64 `json:"mean_tok_s,omitempty"`
}

// ReadStats say what the digest read and how fast.
type ReadStats struct {
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Kept are the records' bytes whose stamps were kept on the host from
	// an earlier digest (Options.Keep), not read again
	Kept    int64   `json:"kept_bytes,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Build digests the root.
func Build(o Options) (*Summary, error) {
	if o.Loc == nil {
		o.Loc = time.Local
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	if o.StallAfter <= 0 {
		o.StallAfter = 10 * time.Minute
	}
	if fi, err := os.Stat(filepath.Join(o.Root, parse.PreparedDir)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("digest: %s is no pipeline root (no %s/ directory)", o.Root, parse.PreparedDir)
	}
	o.Now = o.Now.In(o.Loc)
	start := align(o.Since.In(o.Loc), o.Every)
	n := int((o.Now.Sub(start) + o.Every - 1) / o.Every)
	if n > MaxIntervals {
		return nil, fmt.Errorf("digest: --since %s in steps of %s is %d intervals, more than %d: take a longer --every", o.Since.Format(time.RFC3339), o.Every, n, MaxIntervals)
	}
	began := time.Now()
	s := &Summary{Schema: Schema, Root: o.Root, Zone: o.Now.Format("MST -07:00"), Now: o.Now, Since: start,
		EverySec: int64(o.Every / time.Second), Intervals: make([]Interval, max(n, 1)), byName: map[string]*catAcc{}}
	s.Host, _ = os.Hostname()
	for i := range s.Intervals {
		s.Intervals[i].Start = start.Add(time.Duration(i) * o.Every)
	}
	d := &digester{o: o, s: s, start: start, inc: newIncidents(), runs: map[string]*Run{}, keep: newKeeper(o.Keep, o.Loc, o.Now)}
	d.readWorker()
	d.readWorkerLog()
	// the server log's scan touches none of what the records' fold does
	// (the incidents, the server's totals, the intervals' answers): it
	// runs beside it, and what needs both waits for both
	serverLog := d.readServerLog()
	err := d.readCategories()
	if err2 := serverLog(); err == nil {
		err = err2
	}
	if err != nil {
		return nil, err
	}
	d.placeConfigs()
	d.finish()
	s.Read.Seconds = time.Since(began).Seconds()
	return s, nil
}

// digester holds the state of one Build.
type digester struct {
	o    Options
	keep *keeper // the stamps kept of the records (nil: none)
	// writers are the processes writing the worker log and the records,
	// by path, once asked (writersOf)
	writers                    map[string][]int
	writersAsked, writersKnown bool
	s                          *Summary
	start                      time.Time
	inc                        *incidents
	runs                       map[string]*Run
	worker                     *parse.WorkerState
	specs                      map[string]parse.CategorySpec // pipeline.toml's categories (nil: none)
	capture                    parse.Capture                 // pipeline.toml's [capture]
	cost                       parse.CostRate                // pipeline.toml's [cost]
	tallies                    map[string]*parse.Tallies     // each category's runs' tallies (runs.jsonl; spend.go)
	gate                       parse.GateRules               // pipeline.toml's [gate]
	// logTarget is each category's "NAME: N prompts" in the worker log
	logTarget map[string]int
	launches  []parse.ServerLaunch // the server log's start lines (eras.go)
	segs      []segment            // the runs' starts on categories, from runs.jsonl
	stalls    []Incident           // gaps in categories' records, before the outages are known
	// outages are the server's down times, for the stalls they explain
	outages []Incident
	// took are the last two categories the worker log says were taken up,
	// and logTime when that log was last written: an old script's hang
	took    []string
	logTime time.Time
	lf      logFacts       // what the log says of each category since its header
	byYou   map[int]bool   // pids synthwatch's kill stopped
	note    parse.KillNote // the last kill's note
	waits   []*logWait     // the waits on the server the worker log tells
	script  scriptTail     // the worker log's last words, for the old script
	// waitTracks follow the runs' records on categories to place them;
	// waited are the placed waits, for the stalls they explain
	waitTracks map[runCat]*waitTrack
	waited     []Incident
}

// slot is the interval of t, or -1 outside the window.
func (d *digester) slot(t time.Time) int {
	if t.Before(d.start) || t.After(d.o.Now) {
		return -1
	}
	i := int(t.Sub(d.start) / d.o.Every)
	if i >= len(d.s.Intervals) {
		i = len(d.s.Intervals) - 1
	}
	return i
}

func (d *digester) inWindow(t time.Time) bool { return d.slot(t) >= 0 }

// align rounds t down to a multiple of every counted from the local
// midnight, so that an hour starts on the hour in the host's zone.
func align(t time.Time, every time.Duration) time.Time {
	midnight := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	return midnight.Add(t.Sub(midnight) / every * every)
}

// readWorker reads worker.json when there is one; a missing or torn one is
// a note, not an error.
func (d *digester) readWorker() {
	data, err := parse.ReadRegular(filepath.Join(d.o.Root, filepath.FromSlash(parse.WorkerStatePath)))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil {
		var st parse.WorkerState
		if st, err = parse.ParseWorkerState(data); err == nil {
			d.worker = &st
			d.s.Worker = &Worker{PID: st.PID, State: st.State, Category: st.Category, UpdatedAt: st.UpdatedAt}
			return
		}
	}
	d.s.Notes = append(d.s.Notes, "worker.json unreadable: "+err.Error())
}

// minRateSpan is the least time between a window's first and last record
// that gives a category a rate (and an ETA).
const minRateSpan = time.Minute

// finish sorts what was gathered and derives rates and ETAs.
func (d *digester) finish() {
	s := d.s
	for i := range s.Categories {
		c := &s.Categories[i]
		acc := s.byName[c.Name]
		if c.Error != "" {
			continue // unknown: a partial read's figures would mislead
		}
		c.InWindow = acc.inWindow
		// a rate over less than minRateSpan is noise: 50 records that ended
		// within a second are no 180,000/h
		if acc.wLast.Sub(acc.wFirst) >= minRateSpan && acc.inWindow >= 2 {
			c.RatePerHour = float64(acc.inWindow-1) / acc.wLast.Sub(acc.wFirst).Hours()
		}
	}
	d.judgeCategories() // its state, and an ETA only when it runs
	s.Capture = d.captureForecast()
	d.spends()
	d.runEnds()
	d.placeWaits() // before the stalls: a wait explains the stall within it
	d.segmentStalls()
	for _, r := range d.runs {
		s.Runs = append(s.Runs, *r)
	}
	sort.Slice(s.Runs, func(i, j int) bool { return runOrder(s.Runs[i]).Before(runOrder(s.Runs[j])) })
	d.runIncidents()
	s.Incidents, s.Dropped = d.inc.sorted()
	d.lost(s.Incidents)
	d.untimed()
	var sum float64
	var n int
	for _, iv := range s.Intervals {
		if iv.Throughput != nil {
			sum += iv.Throughput.Mean
			n++
		}
	}
	if n > 0 {
		s.Server.MeanTokS = sum / float64(n)
	}
}

// runOrder sorts runs by start (records with no run first).
func runOrder(r Run) time.Time {
	switch {
	case r.Started != nil:
		return *r.Started
	case r.First != nil:
		return *r.First
	}
	return time.Time{}
}

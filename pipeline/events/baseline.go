package events

import (
	"fmt"
	"sort"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// The night's own baseline: per-minute means of the server's throughput
// and of each class's records rate, over the last baselineWindow, kept
// only while the worker runs (an idle server is no "normal"). A drop is a
// figure under dropBelow of its trailing median for dropFor.
const (
	baselineBucket = time.Minute
	baselineWindow = 6 * time.Hour
	baselineMin    = 30 // minutes of samples before a median is trusted
	dropBelow      = 0.5
	dropFor        = 10 * time.Minute
	recoverAbove   = 0.7 // hysteresis: a drop ends above this share of the median
)

type bucket struct {
	start time.Time
	sum   float64
	n     int
	cfg   string // the server configuration it ran under
}

// series is a bounded ring of per-minute buckets.
type series struct {
	b         []bucket
	dropSince time.Time
	announced bool
	retrAt    int // retractions when the drop began
}

func (s *series) add(now time.Time, v float64, cfg string) {
	start := now.Truncate(baselineBucket)
	if n := len(s.b); n > 0 && s.b[n-1].start.Equal(start) {
		s.b[n-1].sum += v
		s.b[n-1].n++
		return
	}
	s.b = append(s.b, bucket{start: start, sum: v, n: 1, cfg: cfg})
	cut := 0
	for cut < len(s.b) && now.Sub(s.b[cut].start) > baselineWindow {
		cut++
	}
	s.b = append(s.b[:0], s.b[cut:]...)
}

// median of the bucket means, and how many there are.
func (s *series) median() (float64, int) {
	if len(s.b) == 0 {
		return 0, 0
	}
	m := make([]float64, len(s.b))
	for i, b := range s.b {
		m[i] = b.sum / float64(b.n)
	}
	sort.Float64s(m)
	if len(m)%2 == 1 {
		return m[len(m)/2], len(m)
	}
	return (m[len(m)/2-1] + m[len(m)/2]) / 2, len(m)
}

// usualConfig is the configuration most minutes ran under.
func (s *series) usualConfig() string {
	n := map[string]int{}
	best := ""
	for _, b := range s.b {
		n[b.cfg]++
		if n[b.cfg] > n[best] {
			best = b.cfg
		}
	}
	return best
}

// Baseline is the throughput against the night's median: the server's
// and each class's series, a sustained drop an event naming its likely
// cause.
type Baseline struct {
	tl      *timeline.Timeline // where a drop and its recovery go
	server  series
	classes map[string]*series
	shown   snapshot.Baseline // this poll's judgement, which the Snapshot shows
}

// NewBaseline is a baseline with nothing sampled, its events going to tl.
func NewBaseline(tl *timeline.Timeline) *Baseline { return &Baseline{tl: tl} }

// Shown is this poll's judgement, which the Snapshot shows.
func (b *Baseline) Shown() snapshot.Baseline { return b.shown }

// Fold samples this poll's figures (s's worker, server and categories, as
// judged) and judges drops into s.Baseline, kept for the Snapshot; a
// sustained drop is an event naming the likely cause. runs: the run lines
// of the worker's category (their configs); retr: the server's retractions.
func (b *Baseline) Fold(s *snapshot.Snapshot, now time.Time, runs []parse.RunLine, retr int) {
	defer func() { b.shown = s.Baseline }()
	if b.classes == nil {
		b.classes = map[string]*series{}
	}
	running := s.Worker.State == snapshot.WorkerRunning
	cfg := currentConfig(runs)
	if running && s.Server.Source != "" {
		b.server.add(now, s.Server.GenThroughput, cfg)
	}
	if t, ok := b.judge(&b.server, s.Server.GenThroughput, running && s.Server.Source != "", s, cfg, "", now, runs, retr); ok {
		s.Baseline.Server = &t
	}
	for _, c := range s.Categories {
		if c.State != snapshot.StateRunning {
			continue
		}
		cs := b.classes[c.Class]
		if cs == nil {
			cs = &series{}
			b.classes[c.Class] = cs
		}
		if running {
			cs.add(now, c.RatePerMin, cfg)
		}
		if t, ok := b.judge(cs, c.RatePerMin, running, s, cfg, c.Class, now, runs, retr); ok {
			t.Class = c.Class
			s.Baseline.Classes = append(s.Baseline.Classes, t)
		}
	}
}

// judge compares v with the series' median; ok is false with no median yet.
func (b *Baseline) judge(se *series, v float64, live bool, s *snapshot.Snapshot, cfg, class string, now time.Time, runs []parse.RunLine, retr int) (snapshot.Trend, bool) {
	med, n := se.median()
	if n < baselineMin || med <= 0 {
		return snapshot.Trend{}, false
	}
	t := snapshot.Trend{Now: v, Median: med, Minutes: n}
	what := "server throughput"
	unit := "tok/s"
	if class != "" {
		what, unit = class+" records rate", "/min"
	}
	switch {
	case live && v < dropBelow*med:
		if se.dropSince.IsZero() {
			se.dropSince, se.retrAt = now, retr
		}
	case !live || v >= recoverAbove*med:
		if se.announced && live {
			b.tl.Add(snapshot.Event{Time: now.UTC(), Kind: "throughput_recovered",
				Text: fmt.Sprintf("%s back to %.0f %s (median %.0f)", what, v, unit, med)})
		}
		se.dropSince, se.announced = time.Time{}, false
	}
	if !se.dropSince.IsZero() {
		d := se.dropSince.UTC()
		t.DropSince = &d
		if now.Sub(se.dropSince) >= dropFor {
			t.Cause = dropCause(se, s, cfg, runs, retr)
			if !se.announced {
				se.announced = true
				b.tl.Add(snapshot.Event{Time: now.UTC(), Kind: "throughput_drop",
					Text: fmt.Sprintf("%s %.0f %s, under %.0f%% of its median %.0f for %s: %s",
						what, v, unit, 100*dropBelow, med, snapshot.FormatDuration(now.Sub(se.dropSince)), t.Cause),
					Key: fmt.Sprintf("throughput_drop|%s|%d", class, se.dropSince.UnixNano())})
			}
		}
	}
	return t, true
}

// dropCause names the likely cause from what this poll already has.
func dropCause(se *series, s *snapshot.Snapshot, cfg string, runs []parse.RunLine, retr int) string {
	usual := se.usualConfig()
	switch {
	case cfg != "" && usual != "" && cfg != usual:
		return fmt.Sprintf("the server restarted with different arguments (%s now, %s before)",
			configName(runs, cfg), configName(runs, usual))
	case s.Server.TokenUsage >= 0.95:
		return fmt.Sprintf("KV cache saturated (%.0f%% used)", 100*s.Server.TokenUsage)
	case retr > se.retrAt:
		return fmt.Sprintf("retractions rising (%d since the drop began)", retr-se.retrAt)
	case s.Server.Source != "" && s.Server.QueueReqs == 0:
		return fmt.Sprintf("the server's queue is empty (%d running): the worker is the bottleneck", s.Server.RunningReqs)
	case s.Server.Source == "":
		return "no server figures (" + string(s.Server.State) + ")"
	}
	return "no cause the metrics show"
}

// currentConfig is the config key of the latest run of the worker's
// category (runs: its run lines).
func currentConfig(runs []parse.RunLine) string {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Snapshot.Known() {
			return runs[i].Snapshot.ConfigKey
		}
	}
	return ""
}

func configName(runs []parse.RunLine, key string) string {
	if l := parse.ConfigLabels(runs)[key]; l != "" {
		return l
	}
	return key
}

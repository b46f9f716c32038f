package digest_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

// night writes a known night ending at 06:20 in a zone 5:30 east (an hour
// must still start on the hour) and digests its last 12 hours.
func night(t *testing.T) (*digest.Summary, digesttest.Truth) {
	t.Helper()
	loc := time.FixedZone("IST", 5*3600+1800)
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	tr := digesttest.Night(t, root, now, digesttest.Options{})
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func TestDigestHourlyCountsEqualTheTruth(t *testing.T) {
	s, tr := night(t)
	if len(s.Intervals) != 13 || !s.Intervals[0].Start.Equal(tr.Start) {
		t.Fatalf("intervals: %d from %v, want 13 from %v", len(s.Intervals), s.Intervals[0].Start, tr.Start)
	}
	if s.Intervals[0].Start.Minute() != 0 {
		t.Errorf("an hour starts at %v, not on the hour", s.Intervals[0].Start)
	}
	for h, iv := range s.Intervals {
		for _, c := range digesttest.Categories {
			got, want := iv.Categories[c], tr.Hours[h][c]
			if got.Records != want.Records || got.Tokens != want.Tokens {
				t.Errorf("hour %d (%s) %s: %+v, want %+v", h, iv.Start.Format("15:04"), c, got, want)
			}
		}
		if want, ok := tr.TokS[h]; ok != (iv.Throughput != nil) || ok && math.Abs(iv.Throughput.Mean-want) > 0.01 {
			t.Errorf("hour %d throughput %+v, want %.2f (%v)", h, iv.Throughput, want, ok)
		}
	}
	for _, c := range s.Categories {
		if c.Records != tr.Records[c.Name] || c.Tokens != tr.Tokens[c.Name] || c.NoTime != tr.NoTime[c.Name] || c.Prompts != tr.Prompts[c.Name] {
			t.Errorf("%s totals: %+v, want records %d tokens %d no_time %d prompts %d", c.Name, c, tr.Records[c.Name], tr.Tokens[c.Name], tr.NoTime[c.Name], tr.Prompts[c.Name])
		}
	}
}

func TestDigestIncidentsAtTheirOwnTimes(t *testing.T) {
	s, tr := night(t)
	find := func(kind string, at time.Time) *digest.Incident {
		for i, in := range s.Incidents {
			if in.Kind == kind && in.Time.Equal(at) {
				return &s.Incidents[i]
			}
		}
		t.Errorf("no %s at %v in %+v", kind, at, s.Incidents)
		return nil
	}
	if c := find(digest.KindOutage, tr.Crash); c != nil && (!strings.Contains(c.Text, "illegal memory access") || strings.ContainsRune(c.Text, 0x1b) ||
		c.End == nil || !c.End.Equal(tr.Ready) || c.Span(s.Now) != 20*time.Minute || c.Lost == nil || *c.Lost == 0) {
		t.Errorf("outage %+v: want the exception, sanitised, 20m to the ready line, and the records it cost", c)
	}
	for _, in := range s.Incidents {
		if in.Kind == digest.KindRestart || in.Kind == digest.KindOutage && !in.Time.Equal(tr.Crash) {
			t.Errorf("the crash is one line, the outage: %+v", in)
		}
	}
	if r := find(digest.KindRunEnd, tr.Run1End); r != nil && !strings.Contains(r.Text, "stopped by you") {
		t.Errorf("run r1's end: %+v", r)
	}
	if st := find(digest.KindStall, tr.Stall); st != nil && st.Category != "B2_opencodeinstruct" {
		t.Errorf("stall: %+v", st)
	}
	find(digest.KindRunStart, tr.Run2)
	for _, in := range s.Incidents {
		if in.Kind == digest.KindStall && !in.Time.Equal(tr.Stall) {
			t.Errorf("a stall that is none (the crash's gap is the outage's): %+v", in)
		}
		if in.Kind == digest.KindStall && (in.End == nil || in.End.Sub(in.Time) < 35*time.Minute) {
			t.Errorf("the stall has no end or is short: %+v", in)
		}
	}
	if s.Server.Crashes != 1 || s.Server.Restarts != 1 {
		t.Errorf("server totals %+v", s.Server)
	}
}

func TestDigestRunsAndSize(t *testing.T) {
	s, tr := night(t)
	byID := map[string]digest.Run{}
	var sum int64
	for _, r := range s.Runs {
		byID[r.ID] = r
		sum += r.Records
	}
	var all int64
	for _, n := range tr.Records {
		all += n
	}
	if sum != all {
		t.Errorf("runs hold %d records, the files %d", sum, all)
	}
	if r := byID["r2"]; r.Started == nil || !r.Started.Equal(tr.Run2) || r.Config != "0f0f0f0f0f0f" || s.Configs[r.Config]["kv_cache_dtype"] != "fp8_e4m3" {
		t.Errorf("run r2: %+v, configs %v", r, s.Configs)
	}
	if v := s.Configs["0f0f0f0f0f0f"]["max_total_num_tokens"]; v != "1048576" { // JSON numbers are float64: no 1.048576e+06
		t.Errorf("max_total_num_tokens reads %q", v)
	}
	for id, want := range map[string]string{"r0": digest.EndDied, "r1": digest.EndByYou, "r2": digest.EndRunning, "": digest.EndUnknown} {
		if r := byID[id]; r.End != want || r.EndHow == "" {
			t.Errorf("run %q ends %q (%s), want %q", id, r.End, r.EndHow, want)
		}
	}
	if r := byID["r1"]; r.EndAt == nil || !r.EndAt.Equal(tr.Run1End) || r.EndCause == "" {
		t.Errorf("r1 ends at %v (%q), want %v with its signal", r.EndAt, r.EndCause, tr.Run1End)
	}
	if byID[""].Records != tr.NoTime["B1_glaive"] {
		t.Errorf("records with no run: %+v, want %d", byID[""], tr.NoTime["B1_glaive"])
	}
	b, _ := json.Marshal(s)
	if len(b) > 64<<10 {
		t.Errorf("summary is %d bytes", len(b))
	}
	t.Logf("summary: %d bytes for %d bytes of files", len(b), tr.Bytes)
}

func TestDigestRefusesTooManyIntervals(t *testing.T) {
	root := t.TempDir()
	digesttest.Night(t, root, time.Now(), digesttest.Options{})
	_, err := digest.Build(digest.Options{Root: root, Since: time.Now().Add(-30 * 24 * time.Hour), Every: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "longer --every") {
		t.Errorf("err = %v", err)
	}
	if _, err := digest.Build(digest.Options{Root: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "no pipeline root") {
		t.Errorf("empty dir: err = %v", err)
	}
}

// A bad line is counted; a torn tail (a record still being written, no
// '\n' yet) is neither a record nor a bad line.
func TestDigestBadLinesAndTornTail(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	tr := digesttest.Night(t, root, now, digesttest.Options{})
	raw := filepath.Join(root, "prepared", "B3_python", "raw_responses.jsonl")
	f, err := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not json\n" + `{"id":"torn","completion_tokens":5,"finished_at":"2026-03-04T06:1`)
	f.Close()
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Categories {
		if c.Name == "B3_python" && (c.BadLines != 1 || c.Records != tr.Records[c.Name]) {
			t.Errorf("B3: %d bad lines, %d records; want 1 and %d", c.BadLines, c.Records, tr.Records[c.Name])
		}
	}
}

// Records whose tokens are unknown (the old script's None, the key
// missing, "n/a", the worker's null for a stream cut before its usage
// chunk) are counted apart, in the totals and in their interval, never as
// 0 tokens.
func TestDigestTokensUnknownApart(t *testing.T) {
	loc := time.UTC
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	digesttest.Night(t, root, now, digesttest.Options{})
	before, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(root, "prepared", "B3_python", "raw_responses.jsonl")
	f, err := os.OpenFile(raw, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := "2026-03-04T06:10:00.000000"
	f.WriteString(`{"id": "u1", "usage": null, "completion_tokens": null, "finished_at": "` + at + "\"}\n" +
		`{"id": "u2", "finished_at": "` + at + "\"}\n" +
		`{"id": "u3", "completion_tokens": "n/a", "finished_at": "` + at + "\"}\n" +
		`{"id":"u4","run":"r","prompt_tokens":null,"completion_tokens":null,"finished_at":"2026-03-04T06:10:00Z"}` + "\n" +
		`{"id": "k1", "completion_tokens": 7, "finished_at": "` + at + "\"}\n")
	f.Close()
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	find := func(s *digest.Summary) digest.Category {
		for _, c := range s.Categories {
			if c.Name == "B3_python" {
				return c
			}
		}
		t.Fatal("no B3_python")
		return digest.Category{}
	}
	b, c := find(before), find(s)
	if b.TokensUnknown != 0 || c.TokensUnknown != 4 || c.Tokens != b.Tokens+7 || c.Records != b.Records+5 {
		t.Fatalf("B3: %d records, %d tokens, %d unknown; before the five: %d, %d, %d", c.Records, c.Tokens, c.TokensUnknown, b.Records, b.Tokens, b.TokensUnknown)
	}
	var inIntervals int64
	for _, iv := range s.Intervals {
		inIntervals += iv.Categories["B3_python"].TokensUnknown
	}
	if inIntervals != 4 {
		t.Fatalf("%d unknown in the intervals, want 4", inIntervals)
	}
}

// A root the Python script wrote (json.dumps, the time in "timestamp" or
// "created_at", no finished_at, no run) is placed in time by those fields:
// the hourly table equals the truth, says which field each hour's figures
// came from, and counts what carries no time apart.
func TestDigestPythonEraRecordsPlacedInTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 4, 20, 0, 0, time.UTC)
	root := t.TempDir()
	tr := digesttest.PythonNight(t, root, now)
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-4 * time.Hour), Now: now, Loc: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Intervals) != 5 || !s.Intervals[0].Start.Equal(tr.Start) {
		t.Fatalf("intervals: %d from %v", len(s.Intervals), s.Intervals[0].Start)
	}
	for h, iv := range s.Intervals {
		for _, c := range []string{"B1_glaive", "B2_code", "B3_python"} {
			if got, want := iv.Categories[c].Records, int64(tr.Hours[h][c]); got != want {
				t.Errorf("hour %s %s: %d records, want %d", iv.Start.Format("15:04"), c, got, want)
			}
		}
		if iv.Untimed != tr.Untimed[h] {
			t.Errorf("hour %s: %d records with no time by the server's answers, want %d", iv.Start.Format("15:04"), iv.Untimed, tr.Untimed[h])
		}
		for _, f := range []string{"timestamp", "created_at", parse.FinishedField} {
			if got, want := iv.Sources[f], int64(tr.Fields[h][f]); got != want {
				t.Errorf("hour %s: %d records placed by %s, want %d", iv.Start.Format("15:04"), got, f, want)
			}
		}
	}
	var noTime, all int64
	for _, c := range s.Categories {
		noTime += c.NoTime
		all += c.Records
	}
	if s.UntimedPlaced != tr.NoTime {
		t.Errorf("the server's answers placed %d records with no time, want %d", s.UntimedPlaced, tr.NoTime)
	}
	if noTime != tr.NoTime || all != tr.Records {
		t.Errorf("%d records, %d with no time; want %d, %d", all, noTime, tr.Records, tr.NoTime)
	}
}

// A category whose records of the window all ended within a second (a
// small category a fast server finished at once) has no rate and no ETA:
// 50 records over 20 ms are no 9,000,000/h.
func TestDigestNoRateOverAMoment(t *testing.T) {
	t.Parallel()
	loc := time.UTC
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	dir := filepath.Join(root, "prepared", "Z_quick")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var prompts, recs strings.Builder
	for i := range 80 {
		fmt.Fprintf(&prompts, `{"id": "z%d", "messages": [{"role": "user", "content": "q"}]}`+"\n", i)
	}
	for i := range 50 {
		fmt.Fprintf(&recs, `{"id": "z%d", "completion_tokens": 9, "finished_at": "2026-03-04T06:10:00.%06dZ"}`+"\n", i, i*400)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(prompts.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), []byte(recs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-12 * time.Hour), Now: now, Loc: loc})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Categories {
		if c.Name == "Z_quick" {
			if c.Records != 50 || c.InWindow != 50 || c.RatePerHour != 0 || c.ETASec != nil {
				t.Fatalf("Z_quick: %d records, %d in window, rate %.0f/h, ETA %v", c.Records, c.InWindow, c.RatePerHour, c.ETASec)
			}
			return
		}
	}
	t.Fatal("no Z_quick")
}

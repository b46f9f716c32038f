// Package digesttest writes pipeline roots whose night is known: records
// with finish times across 12 hours, an SGLang log with throughput lines,
// a crash and a restart at known times, and two runs. Tests of the digest
// and of `synthwatch report` compare what they read with Truth.
package digesttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Counts are one category's records and tokens in one hour.
type Counts struct{ Records, Tokens int64 }

// Truth is what a digest of the root over its 12 hours must find.
type Truth struct {
	Start   time.Time           // the first hour of the night, on the hour
	Hours   []map[string]Counts // per hour of the night, per category
	Crash   time.Time           // the scheduler crash, as the log prints it
	Ready   time.Time           // the server ready again
	Stall   time.Time           // B2's last record before its 35-minute gap
	Run2    time.Time           // the second run's start
	Run1End time.Time           // the first run's end line: stopped by synthwatch's kill
	NoTime  map[string]int64    // records with no finished_at
	Records map[string]int64    // every record, the night's and older ones
	Tokens  map[string]int64
	Prompts map[string]int64
	// TokS is the mean server throughput of each hour with throughput lines
	// (the log's numbers are hour-dependent: 900 + 10 × hour).
	TokS map[int]float64
	// Bytes is the size of the root's files.
	Bytes int64
}

// Categories of the night, in the manifest's order.
var Categories = []string{"B1_glaive", "B2_opencodeinstruct", "B3_python"}

// Options shape the night.
type Options struct {
	// Pad is how many bytes of content a record carries (default 300). A
	// big root for a benchmark takes a large Pad.
	Pad int
	// Scale multiplies the record counts (default 1).
	Scale int
	// WorkerPID is the pid of the running run r2 and of worker.json
	// (default 4200); a digest that asks the host whether it lives wants
	// one that does, such as the test's own.
	WorkerPID int
}

// Night writes the root at dir for a night ending at now (the hour that
// holds now is the 13th and holds a few records; the 12 before it are the
// night) and returns the truth.
func Night(t testing.TB, dir string, now time.Time, o Options) Truth {
	t.Helper()
	if o.Pad <= 0 {
		o.Pad = 300
	}
	if o.Scale <= 0 {
		o.Scale = 1
	}
	if o.WorkerPID <= 0 {
		o.WorkerPID = 4200
	}
	loc := now.Location()
	hour := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), 0, 0, 0, loc)
	start := hour.Add(-12 * time.Hour)
	tr := Truth{Start: start, Hours: make([]map[string]Counts, 13), NoTime: map[string]int64{}, Records: map[string]int64{},
		Tokens: map[string]int64{}, Prompts: map[string]int64{}, TokS: map[int]float64{}}
	for i := range tr.Hours {
		tr.Hours[i] = map[string]Counts{}
	}
	tr.Crash = start.Add(7*time.Hour + 13*time.Minute + 5*time.Second)
	tr.Ready = tr.Crash.Add(20 * time.Minute)
	tr.Run2 = tr.Ready.Add(5 * time.Minute)
	tr.Run1End = tr.Run2.Add(-time.Minute)
	gap := start.Add(5*time.Hour + 10*time.Minute)
	run1 := start.Add(-time.Minute)

	w := newWriter(t, dir, &tr)
	defer w.close()
	pad := strings.Repeat("synthetic completion text. ", o.Pad/27+1)[:o.Pad]

	// B1: hours 0-4 at 60/h, plus 100 records from before the night, and 5
	// lines from an old Python tool with no finished_at.
	// B2: hours 4-10, a stall 5:10-5:45, nothing from the crash to run 2.
	// B3: hours 10-12 and into the current hour, half written by Python.
	type span struct {
		cat        string
		from, to   time.Duration // from the night's start
		perHour    int
		pythonEven bool
	}
	spans := []span{
		{"B1_glaive", -3 * time.Hour, -2 * time.Hour, 100, false},
		{"B1_glaive", 0, 4 * time.Hour, 60, false},
		{"B2_opencodeinstruct", 4 * time.Hour, 12 * time.Hour, 45, false},
		{"B3_python", 10 * time.Hour, 12*time.Hour + now.Sub(hour) - time.Minute, 30, true},
	}
	id := 0
	for _, s := range spans {
		n := int(s.to-s.from) * s.perHour * o.Scale / int(time.Hour)
		step := (s.to - s.from) / time.Duration(n)
		for i := 0; i < n; i++ {
			at := start.Add(s.from + time.Duration(i)*step + step/2)
			if s.cat == "B2_opencodeinstruct" && (!at.Before(gap) && at.Before(gap.Add(35*time.Minute)) ||
				!at.Before(tr.Crash) && at.Before(tr.Run2)) {
				continue
			}
			if s.cat == "B2_opencodeinstruct" && at.Before(gap) {
				tr.Stall = at
			}
			run := "r1"
			switch {
			case at.Before(start):
				run = "r0" // an earlier run
			case !at.Before(tr.Run2):
				run = "r2"
			}
			id++
			tokens := int64(100 + id%400)
			python := s.pythonEven && id%2 == 0
			w.record(s.cat, id, run, tokens, at, python, pad)
			tr.Records[s.cat]++
			tr.Tokens[s.cat] += tokens
			if h := int(at.Sub(start) / time.Hour); h >= 0 && h < len(tr.Hours) {
				c := tr.Hours[h][s.cat]
				c.Records++
				c.Tokens += tokens
				tr.Hours[h][s.cat] = c
			}
		}
	}
	for i := 0; i < 5; i++ { // an old tool's lines: BOM, CRLF, no finished_at
		id++
		w.line("B1_glaive", fmt.Sprintf("\xef\xbb\xbf{\"completion_tokens\": 50, \"id\": \"old-%d\", \"content\": \"x\"}\r", id))
		tr.Records["B1_glaive"]++
		tr.Tokens["B1_glaive"] += 50
		tr.NoTime["B1_glaive"]++
	}
	prompts := map[string]int64{"B1_glaive": tr.Records["B1_glaive"], "B2_opencodeinstruct": 600 * int64(o.Scale), "B3_python": 400 * int64(o.Scale)}
	for _, c := range Categories {
		w.prompts(c, prompts[c])
		tr.Prompts[c] = prompts[c]
	}
	w.runLine("B1_glaive", "r0", 4000, start.Add(-3*time.Hour), "a1b2c3d4e5f6", "bfloat16")
	// each run takes its categories up one after another, as the worker does
	w.runLine("B1_glaive", "r1", 4100, run1, "a1b2c3d4e5f6", "bfloat16")
	w.runLine("B2_opencodeinstruct", "r1", 4100, start.Add(4*time.Hour), "a1b2c3d4e5f6", "bfloat16")
	w.endLine("B2_opencodeinstruct", "r1", 4100, tr.Run1End, parse.RunStopped, "terminated signal received")
	w.file(parse.WorkerLogPath, parse.FormatKill(4100, 45*time.Second)+"\n")
	w.runLine("B2_opencodeinstruct", "r2", o.WorkerPID, tr.Run2, "0f0f0f0f0f0f", "fp8_e4m3")
	w.runLine("B3_python", "r2", o.WorkerPID, start.Add(10*time.Hour), "0f0f0f0f0f0f", "fp8_e4m3")
	w.serverLog(start, now, tr.Crash, tr.Ready, tr.TokS)
	w.file(parse.ManifestPath, `[[categories]]
name = "B1_glaive"
[[categories]]
name = "B2_opencodeinstruct"
[[categories]]
name = "B3_python"
`)
	st, _ := json.Marshal(parse.WorkerState{Schema: 1, PID: o.WorkerPID, State: parse.WorkerRunning, Category: "B3_python",
		StartedAt: tr.Run2.UTC(), UpdatedAt: now.UTC(), CategorySince: start.Add(10 * time.Hour).UTC()})
	w.file(parse.WorkerStatePath, string(st))
	return tr
}

// writer writes the root's files through buffers, fast enough for a 2 GB root.
type writer struct {
	t     testing.TB
	dir   string
	tr    *Truth
	files map[string]*bufio.Writer
	osf   []*os.File
}

func newWriter(t testing.TB, dir string, tr *Truth) *writer {
	return &writer{t: t, dir: dir, tr: tr, files: map[string]*bufio.Writer{}}
}

func (w *writer) open(rel string) *bufio.Writer {
	if b, ok := w.files[rel]; ok {
		return b
	}
	p := filepath.Join(w.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	f, err := os.Create(p)
	if err != nil {
		w.t.Fatal(err)
	}
	w.osf = append(w.osf, f)
	b := bufio.NewWriterSize(f, 1<<20)
	w.files[rel] = b
	return b
}

func (w *writer) write(rel, s string) {
	if _, err := w.open(rel).WriteString(s); err != nil {
		w.t.Fatal(err)
	}
	w.tr.Bytes += int64(len(s))
}

func (w *writer) line(cat, s string) {
	w.write(parse.PreparedDir+"/"+cat+"/"+parse.RawFile, s+"\n")
}

func (w *writer) file(rel, s string) { w.write(rel, s) }

// record writes a record as the worker does (sealed, RFC 3339 UTC), or as a
// Python tool would (json.dumps spacing, another key order, a zone-less
// local isoformat time, CRLF).
func (w *writer) record(cat string, id int, run string, tokens int64, at time.Time, python bool, pad string) {
	if python {
		w.line(cat, fmt.Sprintf(`{"content": %q, "finished_at": %q, "run": %q, "usage": {"completion_tokens": %d}, "id": %d}`+"\r",
			pad, at.Format("2006-01-02T15:04:05.000000"), run, tokens, id))
		return
	}
	rec := fmt.Sprintf(`{"id":"p-%d","category":%q,"run":%q,"prompt_tokens":40,"completion_tokens":%d,"finish_reason":"stop","latency_s":12.5,"finished_at":%q,"content":%q}`,
		id, cat, run, tokens, at.UTC().Format(time.RFC3339Nano), pad)
	sealed := parse.SealRecord([]byte(rec))
	w.line(cat, string(sealed[:len(sealed)-1]))
}

func (w *writer) prompts(cat string, n int64) {
	for i := int64(0); i < n; i++ {
		w.write(parse.PreparedDir+"/"+cat+"/"+parse.PromptsFile, fmt.Sprintf(`{"id":"p-%d","messages":[]}`+"\n", i))
	}
}

func (w *writer) runLine(cat, run string, pid int, at time.Time, key, kv string) {
	b, _ := json.Marshal(parse.RunLine{Run: run, PID: pid, StartedAt: at.UTC().Format(time.RFC3339Nano), Version: "v-test",
		Server: parse.DefaultServerURL, API: "chat", Snapshot: parse.ServerSnapshot{ConfigKey: key,
			Info: map[string]any{"kv_cache_dtype": kv, "model_path": "/shared/kimi-k2.5-int4", "tp_size": 8, "max_total_num_tokens": 1048576}}})
	w.write(parse.PreparedDir+"/"+cat+"/"+parse.RunsFile, string(b)+"\n")
}

func (w *writer) endLine(cat, run string, pid int, at time.Time, end, cause string) {
	b, _ := json.Marshal(parse.RunLine{Run: run, PID: pid, EndedAt: at.UTC().Format(time.RFC3339Nano), End: end, Cause: cause})
	w.write(parse.PreparedDir+"/"+cat+"/"+parse.RunsFile, string(b)+"\n")
}

// serverLog writes an SGLang log: a ready line, decode lines every 2
// minutes from 2 hours before the night until now (their throughput says
// the hour), a crash with its traceback, silence, and a ready line again.
func (w *writer) serverLog(start, now, crash, ready time.Time, tokS map[int]float64) {
	ts := func(t time.Time) string { return t.Format("2006-01-02 15:04:05") }
	w.write(parse.ServerLogPath, "["+ts(start.Add(-2*time.Hour-time.Minute))+"] The server is fired up and ready to roll!\n")
	sums, counts := map[int]float64{}, map[int]int{}
	crashed, back := false, false
	for t := start.Add(-2 * time.Hour); t.Before(now); t = t.Add(2 * time.Minute) {
		if !crashed && !t.Before(crash) {
			crashed = true
			w.write(parse.ServerLogPath, "["+ts(crash)+" TP0] Scheduler hit an exception: Traceback (most recent call last):\n"+
				"  File \"/sgl/scheduler.py\", line 2300, in run_scheduler_process\n    scheduler.event_loop_overlap()\n"+
				"RuntimeError: CUDA error: an illegal memory access was encountered\n\x1b[31m\n")
		}
		if !back && !t.Before(ready) {
			back = true
			w.write(parse.ServerLogPath, "["+ts(ready)+"] The server is fired up and ready to roll!\n")
		}
		if crashed && !back {
			continue
		}
		h := int(t.Sub(start) / time.Hour)
		if t.Before(start) {
			h = -1
		}
		v := 900 + 10*float64(h) + float64(t.Minute()%3) // varies inside the hour
		w.write(parse.ServerLogPath, fmt.Sprintf("[%s TP0] Decode batch, #running-req: 150, #token: 370959, token usage: 0.82, cuda graph: True, gen throughput (token/s): %.2f, #queue-req: 12\n", ts(t), v))
		if h >= 0 {
			sums[h] += v
			counts[h]++
		}
	}
	for h, s := range sums {
		tokS[h] = s / float64(counts[h])
	}
}

func (w *writer) close() {
	for _, b := range w.files {
		if err := b.Flush(); err != nil {
			w.t.Fatal(err)
		}
	}
	for _, f := range w.osf {
		if err := f.Close(); err != nil {
			w.t.Fatal(err)
		}
	}
}

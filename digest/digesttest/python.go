package digesttest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// pythonWriter is the old script's way of writing a record: json.dumps of
// a dict, with the time in a field of its own and no finished_at. Argument
// 1 is the file, 2 the time field's form ("epoch": time.time(); "iso":
// datetime.isoformat() in the local zone, no offset; "none": no time at
// all); the times come on stdin, one Unix time a line.
const pythonWriter = `
import datetime, json, sys
path, form = sys.argv[1], sys.argv[2]
with open(path, "a") as f:
    for i, line in enumerate(sys.stdin):
        t = float(line)
        rec = {"id": "py-%d" % i, "prompt": "p", "response": "r" * 80, "usage": {"completion_tokens": 120}}
        if form == "epoch":
            rec["timestamp"] = t
        elif form == "iso":
            rec["created_at"] = datetime.datetime.fromtimestamp(t).isoformat()
        f.write(json.dumps(rec) + "\n")
`

// PythonTruth is what a digest of a Python-era root must find.
type PythonTruth struct {
	Start   time.Time        // the first hour, on the hour
	Hours   []map[string]int // records per hour per category
	Fields  []map[string]int // records per hour per time field
	NoTime  int64            // records with no time at all
	Records int64
	// Untimed are the records with no time answered in each hour: the
	// server log's 200 answers to them (its access lines) are all that
	// places them.
	Untimed []int64
}

// PythonNight writes a root as the Python script left it, ending at now:
// no runs.jsonl, no worker.json, records written by python3's json.dumps.
// B1 carries time.time() in "timestamp"; B2 datetime.isoformat() in
// "created_at" (the zone is python's local one: TZ is set to now's zone
// name, which must be one the system knows, such as UTC); B3 no time. Among
// B1's, 450 fall between hh:33 and hh:39 of one hour, as in the review's
// night. A missing python3 fails under CI=true and skips elsewhere.
func PythonNight(t testing.TB, dir string, now time.Time) PythonTruth {
	t.Helper()
	py := testgate.Tool(t, "python3", "the Python-era root")
	hour := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), 0, 0, 0, now.Location())
	tr := PythonTruth{Start: hour.Add(-4 * time.Hour), Hours: make([]map[string]int, 5), Fields: make([]map[string]int, 5), Untimed: make([]int64, 5)}
	for i := range tr.Hours {
		tr.Hours[i], tr.Fields[i] = map[string]int{}, map[string]int{}
	}
	var times = map[string][]time.Time{}
	burst := tr.Start.Add(time.Hour + 33*time.Minute)
	for i := 0; i < 450; i++ { // 450 in six minutes
		times["B1_glaive"] = append(times["B1_glaive"], burst.Add(time.Duration(i)*6*time.Minute/450))
	}
	for m := 0; m < 4*60; m += 3 { // one every 3 minutes for 4 hours
		times["B1_glaive"] = append(times["B1_glaive"], tr.Start.Add(time.Duration(m)*time.Minute+17*time.Second))
		times["B2_code"] = append(times["B2_code"], tr.Start.Add(time.Duration(m)*time.Minute+40*time.Second))
	}
	for i := 0; i < 25; i++ { // 15 in the first hour, 10 in the second
		times["B3_python"] = append(times["B3_python"], tr.Start.Add(time.Duration(i)*4*time.Minute))
	}
	forms := map[string]string{"B1_glaive": "epoch", "B2_code": "iso", "B3_python": "none"}
	fields := map[string]string{"epoch": "timestamp", "iso": "created_at"}
	for cat, ts := range times {
		d := filepath.Join(dir, parse.PreparedDir, cat)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		var in strings.Builder
		for _, at := range ts {
			in.WriteString(strconv.FormatFloat(float64(at.UnixNano())/1e9, 'f', 6, 64) + "\n")
			tr.Records++
			h := int(at.Sub(tr.Start) / time.Hour)
			if forms[cat] == "none" {
				tr.NoTime++
				tr.Untimed[h]++
				continue
			}
			tr.Hours[h][cat]++
			tr.Fields[h][fields[forms[cat]]]++
		}
		var prompts strings.Builder
		for i := range 2 * len(ts) { // half done
			prompts.WriteString(`{"id": "py-` + strconv.Itoa(i) + `", "messages": []}` + "\n")
		}
		if err := os.WriteFile(filepath.Join(d, parse.PromptsFile), []byte(prompts.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(py, "-c", pythonWriter, filepath.Join(d, parse.RawFile), forms[cat])
		cmd.Stdin = strings.NewReader(in.String())
		cmd.Env = append(os.Environ(), "TZ="+now.Location().String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("python3: %v: %s", err, out)
		}
	}
	accessLog(t, dir, times)
	return tr
}

// accessLog writes the server log SGLang's uvicorn leaves for the night:
// a 200 access line for each answer (the old script's requests are not
// streamed, so the line comes as its answer is ready), among lines that
// are no answer: health checks and a refused request.
func accessLog(t testing.TB, dir string, times map[string][]time.Time) {
	var all []time.Time
	for _, ts := range times {
		all = append(all, ts...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	var b strings.Builder
	line := func(at time.Time, req, status string) {
		fmt.Fprintf(&b, "[%s] INFO:     127.0.0.1:%d - \"%s HTTP/1.1\" %s\n", at.Format("2006-01-02 15:04:05"), 40000+b.Len()%20000, req, status)
	}
	for i, at := range all {
		if i%50 == 0 {
			line(at, "GET /health", "200 OK")
			line(at, "POST /v1/chat/completions", "503 Service Unavailable")
		}
		line(at, "POST /v1/chat/completions", "200 OK")
	}
	p := filepath.Join(dir, filepath.FromSlash(parse.ServerLogPath))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// writeCat writes a category's prompts.jsonl (and raw_responses.jsonl if raw
// is not nil) under a new root.
func writeCat(t *testing.T, root, cat, prompts string, raw []byte) string {
	t.Helper()
	dir := filepath.Join(root, "prepared", cat)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(prompts), 0o644); err != nil {
		t.Fatal(err)
	}
	if raw != nil {
		if err := os.WriteFile(filepath.Join(dir, "raw_responses.jsonl"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// valueKey names a decoded JSON value by type and value, independently of
// parse: "string:été-0", "float64:7", "map[string]interface {}:map[row:5]".
func valueKey(v any) string { return fmt.Sprintf("%T:%v", v, v) }

// recordsByValue reads raw_responses.jsonl the way Python would join it to
// the prompts: every line that is one JSON object (BOM and CRLF allowed),
// counted by its id's value. Lines that are not JSON are counted apart.
func recordsByValue(t *testing.T, dir string) (ids map[string]int, bad int) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "raw_responses.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatal("raw_responses.jsonl does not end with a newline")
	}
	ids = map[string]int{}
	for _, l := range bytes.Split(bytes.TrimSuffix(data, []byte{'\n'}), []byte{'\n'}) {
		l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
		var m map[string]any
		if json.Unmarshal(l, &m) != nil || m["id"] == nil {
			bad++
			continue
		}
		ids[valueKey(m["id"])]++
	}
	return ids, bad
}

// wantEachOnce: every id in want has exactly one record, and no other id
// has more than one.
func wantEachOnce(t *testing.T, ids map[string]int, want []any) {
	t.Helper()
	for _, id := range want {
		if n := ids[valueKey(id)]; n != 1 {
			t.Errorf("id %s: %d records, want 1", valueKey(id), n)
		}
	}
	for id, n := range ids {
		if n > 1 {
			t.Errorf("id %s: %d records", id, n)
		}
	}
}

func runWorker(t *testing.T, cfg Config) string {
	t.Helper()
	var log syncBuffer
	if err := Run(context.Background(), cfg, &log); err != nil {
		t.Fatalf("worker: %v\n%s", err, log.String())
	}
	return log.String()
}

// runWorkerFailed is runWorker for a run that goes through every category
// and fails those named (the error a non-zero exit is made of).
func runWorkerFailed(t *testing.T, cfg Config, failed string) string {
	t.Helper()
	var log syncBuffer
	if err := Run(context.Background(), cfg, &log); !errors.Is(err, ErrCategoriesFailed) || err.Error() != "categories failed: "+failed {
		t.Fatalf("worker: %v, want categories failed: %s\n%s", err, failed, log.String())
	}
	return log.String()
}

func ownRecord(t *testing.T, id string, tokens int) []byte {
	t.Helper()
	c := "old answer"
	line, err := encodeLine(record{ID: json.RawMessage(id), Category: "A", Run: "old", CompletionTokens: tokens, FinishReason: "stop", FinishedAt: "x", Content: &c})
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// Findings 2, 3, 19: a raw file the Python script wrote (default json.dumps
// separators, ensure_ascii escapes, another key order, CRLF, a BOM) resumes
// with every prompt done exactly once by JSON value, none missing.
func TestMigrationFromPythonRaw(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts, raw strings.Builder
	var want []any
	for i := range 60 {
		fmt.Fprintf(&prompts, `{"id": "été-%d", "messages": [{"role": "user", "content": "q%d"}]}`+"\n", i, i)
		want = append(want, fmt.Sprintf("été-%d", i))
	}
	for i := range 20 { // numeric ids too: 7 and 7.0 are one id
		fmt.Fprintf(&prompts, `{"messages": [{"role": "user", "content": "n%d"}], "id": %d}`+"\n", i, 100+i)
		want = append(want, float64(100+i))
	}
	raw.WriteString("\ufeff")
	for i := range 30 {
		fmt.Fprintf(&raw, `{"category": "A", "id": "\u00e9t\u00e9-%d", "content": "old \u00e9", "completion_tokens": 10, "finish_reason": "stop"}`+"\r\n", i)
	}
	for i := range 10 {
		fmt.Fprintf(&raw, `{"content": "x", "id": %d.0, "category": "A", "completion_tokens": 10}`+"\r\n", 100+i)
	}
	dir := writeCat(t, root, "A", prompts.String(), []byte(raw.String()))
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 8})
	if !strings.Contains(log, parse.FormatResume("A", 80, 40, 40)) {
		t.Errorf("want 40 resumed, 40 to go:\n%s", log)
	}
	ids, bad := recordsByValue(t, dir)
	if bad != 0 {
		t.Errorf("%d bad lines", bad)
	}
	wantEachOnce(t, ids, want)
	if len(ids) != 80 {
		t.Errorf("%d distinct ids, want 80", len(ids))
	}
	log = runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 8})
	if !strings.Contains(log, parse.FormatSkip("A", 80)) {
		t.Errorf("second run does not skip:\n%s", log)
	}
}

// Finding 2: records whose ids no prompt has any more do not take the place
// of real prompts.
func TestStaleRawIDsDoNotCount(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts strings.Builder
	var raw []byte
	var want []any
	for i := 50; i < 150; i++ {
		fmt.Fprintf(&prompts, `{"id":"p%d","messages":[{"role":"user","content":"q"}]}`+"\n", i)
		want = append(want, fmt.Sprintf("p%d", i))
	}
	for i := range 100 {
		raw = append(raw, ownRecord(t, fmt.Sprintf(`"p%d"`, i), 5)...)
	}
	dir := writeCat(t, root, "A", prompts.String(), raw)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 8})
	if !strings.Contains(log, "WARNING: A: 50 records in raw_responses.jsonl match no prompt (ids no prompt has any more); they do not count") {
		t.Errorf("no stale warning:\n%s", log)
	}
	if !strings.Contains(log, parse.FormatResume("A", 100, 50, 50)) {
		t.Errorf("want 50 resumed, 50 to go:\n%s", log)
	}
	ids, _ := recordsByValue(t, dir)
	wantEachOnce(t, ids, want)
	if st := readState(t, root); st["categories"].([]any)[0].(map[string]any)["done"] != 100.0 {
		t.Errorf("worker.json: %v", st["categories"])
	}
}

// Finding 5: a glued line and a NUL-damaged line keep an intact head; their
// ids are redone, and the log says so.
func TestGluedAndNULLinesAreRedone(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts strings.Builder
	var want []any
	for i := range 30 {
		fmt.Fprintf(&prompts, `{"id":%d,"messages":[{"role":"user","content":"q"}]}`+"\n", i)
		want = append(want, float64(i))
	}
	var raw []byte
	for i := range 30 {
		line := ownRecord(t, fmt.Sprint(i), 5)
		switch i {
		case 20: // torn by a kill, then the next record appended to it
			line = line[:len(line)/2]
		case 25: // lost pages: NULs from the middle of the record
			line = append(line[:40:40], append(bytes.Repeat([]byte{0}, len(line)-41), '\n')...)
		}
		raw = append(raw, line...)
	}
	dir := writeCat(t, root, "A", prompts.String(), raw)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 4})
	if !strings.Contains(log, "raw_responses.jsonl holds 2 lines that are not valid records; their ids are redone (line 21: ") {
		t.Errorf("no bad-line warning:\n%s", log)
	}
	if !strings.Contains(log, parse.FormatResume("A", 30, 27, 3)) { // 20, 21 (glued) and 25
		t.Errorf("want 27 resumed, 3 to go:\n%s", log)
	}
	ids, bad := recordsByValue(t, dir)
	if bad != 2 {
		t.Errorf("%d bad lines, want the 2 damaged ones", bad)
	}
	wantEachOnce(t, ids, want)
}

// Finding 7: a dataset's own Id field never replaces id; finding 24: the
// last of duplicate id keys wins, as in Python.
func TestIdFieldDoesNotReplaceID(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts strings.Builder
	var want []any
	for i := range 40 {
		fmt.Fprintf(&prompts, `{"messages":[{"role":"user","content":"q"}],"id":"x%d","ID":"a","id":"p%d","Id":"src%d"}`+"\n", i, i, i%5)
		want = append(want, fmt.Sprintf("p%d", i))
	}
	dir := writeCat(t, root, "A", prompts.String(), nil)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 8})
	if !strings.Contains(log, "A: 40 prompts") {
		t.Errorf("want 40 prompts:\n%s", log)
	}
	ids, _ := recordsByValue(t, dir)
	wantEachOnce(t, ids, want)
	if len(ids) != 40 {
		t.Errorf("%d ids", len(ids))
	}
}

// Finding 4 and 10: another tool's float and string completion_tokens, and
// ones after a long field, count for the token budget.
func TestForeignTokensCountForBudget(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts, raw strings.Builder
	long := strings.Repeat("z", 5000)
	for i := range 120 {
		fmt.Fprintf(&prompts, `{"id": %d, "messages": [{"role": "user", "content": "q"}]}`+"\n", i)
	}
	for i := range 40 {
		switch i % 3 {
		case 0:
			fmt.Fprintf(&raw, `{"id": %d, "completion_tokens": 100.0}`+"\n", i)
		case 1:
			fmt.Fprintf(&raw, `{"id": %d, "content": "%s", "completion_tokens": "100"}`+"\n", i, long)
		case 2:
			fmt.Fprintf(&raw, `{"id": %d, "usage": {"completion_tokens": 100}}`+"\n", i)
		}
	}
	writeCat(t, root, "A", prompts.String(), []byte(raw.String()))
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[[categories]]\nname = \"A\"\ntoken_budget = 3000\n"), 0o644)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL()})
	if !strings.Contains(log, "A: token budget reached (4000 of 3000 completion tokens)") || !strings.Contains(log, parse.FormatSkip("A", 40)) {
		t.Errorf("budget not honoured:\n%s", log)
	}
	if strings.Contains(log, "not valid records") || strings.Contains(log, "duplicate") {
		t.Errorf("foreign records read as bad:\n%s", log)
	}
}

// Finding 6: object and array ids are whole ids (not cut at the first
// comma); an id that is not valid JSON is a bad prompt, and the worker goes
// on with the rest and with the next category.
func TestObjectIDsAndBadPromptIDs(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var prompts strings.Builder
	var want []any
	for i := range 30 {
		fmt.Fprintf(&prompts, `{"id":{"shard":0,"row":%d},"messages":[{"role":"user","content":"q"}]}`+"\n", i)
		want = append(want, map[string]any{"shard": 0.0, "row": float64(i)})
	}
	for i := range 5 {
		fmt.Fprintf(&prompts, `{"id":[1,%d],"messages":[{"role":"user","content":"q"}]}`+"\n", i)
		want = append(want, []any{1.0, float64(i)})
	}
	prompts.WriteString("{\"id\":\"tab\there\",\"messages\":[]}\n" + `{"id":"p\x5","messages":[]}` + "\n")
	// ten done by an earlier run with Python spacing and key order
	var raw strings.Builder
	for i := range 10 {
		fmt.Fprintf(&raw, `{"id": {"row": %d, "shard": 0}, "completion_tokens": 3}`+"\n", i)
	}
	dir := writeCat(t, root, "A", prompts.String(), []byte(raw.String()))
	makeCatB := writeCat(t, root, "B", `{"id":"b1","messages":[{"role":"user","content":"q"}]}`+"\n", nil)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL(), Concurrency: 4})
	if !strings.Contains(log, "WARNING: A: 2 prompt lines have no readable id and are skipped (line 36: ") {
		t.Errorf("bad prompts not logged:\n%s", log)
	}
	if !strings.Contains(log, parse.FormatResume("A", 35, 10, 25)) {
		t.Errorf("want 10 resumed, 25 to go:\n%s", log)
	}
	ids, _ := recordsByValue(t, dir)
	wantEachOnce(t, ids, want)
	if len(ids) != 35 {
		t.Errorf("%d ids, want 35", len(ids))
	}
	idsB, _ := recordsByValue(t, makeCatB)
	wantEachOnce(t, idsB, []any{"b1"})
}

// Finding 24: duplicate prompt ids are logged, and done once.
func TestDuplicatePromptIDsLogged(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := `{"id":"a","messages":[{"role":"user","content":"q"}]}` + "\n"
	dir := writeCat(t, root, "A", p+p+`{"id":"\u0061","messages":[]}`+"\n", nil)
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorker(t, Config{Root: root, Server: s.URL()})
	if !strings.Contains(log, "WARNING: A: 2 prompt lines repeat the id of an earlier line") || !strings.Contains(log, "A: 1 prompts") {
		t.Errorf("duplicates not logged:\n%s", log)
	}
	ids, _ := recordsByValue(t, dir)
	wantEachOnce(t, ids, []any{"a"})
}

// Finding 22: a category that cannot run is failed; the next one runs.
func TestCategoryThatCannotRunFailsAlone(t *testing.T) {
	t.Parallel()
	root := makeRoot(t, map[string]int{"A": 3, "B": 3})
	// raw_responses.jsonl that cannot be opened for repair
	if err := os.Mkdir(filepath.Join(root, "prepared", "A", "raw_responses.jsonl"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, sim.Options{Speed: 200})
	log := runWorkerFailed(t, Config{Root: root, Server: s.URL(), Only: []string{"A", "B"}}, "A")
	if !strings.Contains(log, "ERROR: A: repair ") {
		t.Errorf("no error for A:\n%s", log)
	}
	checkOutput(t, root, "B", 3)
	cats := readState(t, root)["categories"].([]any)
	if a := cats[0].(map[string]any); a["name"] != "A" || a["state"] != parse.CatFailed {
		t.Errorf("A: %v", a)
	}
	if b := cats[1].(map[string]any); b["state"] != parse.CatDone {
		t.Errorf("B: %v", b)
	}
}

// Finding 20: a category where every prompt failed ends failed, not done.
func TestEveryPromptFailedIsFailed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeCat(t, root, "A", `{"id":1,"messages":[{"role":"user","content":"long"}]}`+"\n"+`{"id":2,"messages":[{"role":"user","content":"long"}]}`+"\n", nil)
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) { // every prompt is too long for the model
		w.WriteHeader(400)
		io.WriteString(w, `{"object":"error","message":"The input (300000 tokens) is longer than the model's context length (262144 tokens).","code":400}`)
	})
	log := runWorkerFailed(t, Config{Root: root, Server: ts.URL}, "A")
	if st := readState(t, root)["categories"].([]any)[0].(map[string]any)["state"]; st != parse.CatFailed {
		t.Errorf("state %v:\n%s", st, log)
	}
	if !strings.Contains(log, "ERROR: A: all 2 prompts sent by this run failed") {
		t.Errorf("log:\n%s", log)
	}
}

// Finding 16: after a write failure, answers still arriving are neither
// written nor counted.
func TestNoCountAfterWriteFailure(t *testing.T) {
	t.Parallel()
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err) // Linux CI has /dev/full: the test must run there
		}
		t.Skip(err)
	}
	defer f.Close()
	w := &Worker{out: &syncBuffer{}, runID: "r"}
	w.state.Categories = []parse.CategoryState{{Name: "A"}}
	r := &catRun{w: w, c: Category{Name: "A"}, target: 10, raw: &Appender{f: f, path: "/dev/full"}, start: time.Now(), inflight: 3}
	c := "answer"
	for i := range 3 {
		r.writeRecord(outcome{item: item{id: json.RawMessage(fmt.Sprint(i))}, comp: Completion{Content: &c, CompletionTokens: 7}})
	}
	if r.failedErr() == nil || r.done != 0 || r.written != 0 || r.tokens != 0 || r.inflight != 0 {
		t.Errorf("failed %v, done %d, written %d, tokens %d, inflight %d", r.failedErr(), r.done, r.written, r.tokens, r.inflight)
	}
}

// The worker's own records are sealed and read back on the fast path.
func TestOwnRecordsAreSealed(t *testing.T) {
	t.Parallel()
	line := ownRecord(t, `{"b":1,"a":[2]}`, 9)
	if !bytes.Contains(line, []byte(`,"sw_crc":"`)) || !json.Valid(line) {
		t.Fatalf("record not sealed: %s", line)
	}
	h, err := parse.ParseRecordHead(bytes.TrimSuffix(line, []byte{'\n'}))
	if err != nil || h.Key != `{"a":[2e0],"b":1e0}` || h.CompletionTokens != 9 {
		t.Errorf("%+v %v", h, err)
	}
}

// Findings 6, 7, 19, 24 on prompt lines.
func TestParsePromptLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ line, key, id string }{
		{"\xef\xbb\xbf{\"id\":\"p0\",\"messages\":[]}", `"p0"`, `"p0"`},
		{"{\"id\": \"\\u00e9\", \"text\": \"x\"}\r", `"é"`, `"\u00e9"`},
		{`{"messages":[],"id":"p7","Id":"src2"}`, `"p7"`, `"p7"`},
		{`{"id":"x","id":"p"}`, `"p"`, `"p"`},
		{`{"id": {"shard": 0, "row": 5}}`, `{"row":5e0,"shard":0}`, `{"shard":0,"row":5}`},
		{`{"id":7.0,"messages":null}`, `7e0`, `7.0`},
		{`{"id":null}`, "", ""},
		{`{"Id":"p"}`, "", ""},
		{"{\"id\":\"a\tb\"}", "", ""},
		{`{"id":"p\x5"}`, "", ""},
		{`{"id":1}{"id":2}`, "", ""},
	} {
		pl, err := parsePromptLine([]byte(c.line))
		if c.key == "" {
			if err == nil {
				t.Errorf("%q: accepted as %s", c.line, pl.key)
			}
			continue
		}
		if err != nil || pl.key != c.key || string(pl.id) != c.id || string(pl.prompt.ID) != c.id {
			t.Errorf("%q: %s %s %v", c.line, pl.key, pl.id, err)
		}
		if pl.prompt.Messages != nil && string(pl.prompt.Messages) == "null" {
			t.Errorf("%q: null messages kept", c.line)
		}
	}
}

package worker

// The corpus tests: the real worker on testdata/corpus (written by
// scripts/make_corpus.py), the shapes real datasets and the old Python
// script left behind, killed with SIGKILL at random moments and resumed.
// The final state is checked by a checker that shares nothing with the
// worker: it decodes every line with encoding/json and compares ids as JSON
// values (strings after unescaping, numbers by exact value: 7 == 7.0,
// "7" != 7). TestCorpusPythonChecker checks the same with python3's
// json.loads (scripts/check_corpus.py) and that both checkers agree.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/sim"
)

func TestCorpusKill9ExactlyOnce(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	root, cats := corpusRoot(t)
	runCorpus(t, root, cats, 50, 20261128)
	failed := false
	for _, s := range checkCorpus(t, root, corpusDir(t), cats) {
		if !s.OK {
			failed = true
			t.Errorf("%s: %d missing, %d ids with more than one record (%d extra), %d new lines not whole JSON, %d new records for ids no prompt has, %d abort records, %d with a wrong category, torn tail %v\n    %s",
				s.Category, s.Missing, s.DuplicateIDs, s.ExtraRecords, s.NewInvalidLines, s.StrayNewRecords, s.Aborts, s.WrongCategory, s.TornTail, strings.Join(s.Examples, "\n    "))
		}
	}
	if failed {
		t.Log("the corpus and its expected state: scripts/make_corpus.py; the same check in Python: scripts/check_corpus.py")
	}
}

// The same check by an independent implementation: python3's json.loads.
// Both checkers must read the untouched corpus the same way (and as the
// generator meant it), and must agree on the final state.
func TestCorpusPythonChecker(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed for the corpus check under CI")
		}
		t.Skip("no python3")
	}
	script, err := filepath.Abs(filepath.Join("..", "scripts", "check_corpus.py"))
	if err != nil {
		t.Fatal(err)
	}
	root, cats := corpusRoot(t)
	pyCheck := func(stage string) map[string]corpusSummary {
		cmd := exec.Command(py, script, "--json", root, corpusDir(t))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == 2:
			t.Fatalf("%s: check_corpus.py reports a harness problem:\n%s", stage, stderr.String())
		case err != nil && !errors.As(err, &ee):
			t.Fatalf("%s: check_corpus.py: %v\n%s", stage, err, stderr.String())
		}
		got := map[string]corpusSummary{}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var s corpusSummary
			if err := dec.Decode(&s); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: check_corpus.py output: %v\n%s", stage, err, out)
			}
			got[s.Category] = s
		}
		if len(got) != len(cats) {
			t.Fatalf("%s: check_corpus.py reported %d categories, want %d:\n%s", stage, len(got), len(cats), out)
		}
		return got
	}
	agree := func(stage string, gosum []corpusSummary, pysum map[string]corpusSummary) {
		for _, g := range gosum {
			p := pysum[g.Category]
			g.Examples, p.Examples = nil, nil
			if !reflect.DeepEqual(g, p) {
				t.Errorf("%s: the Go and Python checkers disagree on %s:\n  go     %+v\n  python %+v", stage, g.Category, g, p)
			}
		}
	}
	// before the run: the same reading of the corpus, the missing ids as the
	// generator left them
	agree("untouched corpus", checkCorpus(t, root, corpusDir(t), cats), pyCheck("untouched corpus"))

	runCorpus(t, root, cats, 10, 7)
	pysum := pyCheck("after the run")
	agree("after the run", checkCorpus(t, root, corpusDir(t), cats), pysum)
	for _, c := range cats {
		if s := pysum[c]; !s.OK {
			t.Errorf("python: %s: %d missing, %d ids with more than one record (%d extra), %d new lines not whole JSON, %d new records for ids no prompt has, %d abort records, torn tail %v\n    %s",
				c, s.Missing, s.DuplicateIDs, s.ExtraRecords, s.NewInvalidLines, s.StrayNewRecords, s.Aborts, s.TornTail, strings.Join(s.Examples, "\n    "))
		}
	}
}

func corpusDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "testdata", "corpus"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// corpusRoot copies the corpus (prompts and old raw files, not expect.json)
// into a fresh pipeline root and returns it with the category names.
func corpusRoot(t testing.TB) (string, []string) {
	t.Helper()
	src := corpusDir(t)
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatalf("corpus: %v (regenerate with python3 scripts/make_corpus.py)", err)
	}
	root := t.TempDir()
	var cats []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		cats = append(cats, e.Name())
		dir := filepath.Join(root, "prepared", e.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"prompts.jsonl", "raw_responses.jsonl"} {
			data, err := os.ReadFile(filepath.Join(src, e.Name(), f))
			if errors.Is(err, os.ErrNotExist) && f != "prompts.jsonl" {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(cats) < 5 {
		t.Fatalf("corpus has %d categories; regenerate with python3 scripts/make_corpus.py", len(cats))
	}
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	// the harness reads the corpus as its generator meant it
	for _, s := range checkCorpus(t, root, src, cats) {
		var exp map[string]any
		data, err := os.ReadFile(filepath.Join(src, s.Category, "expect.json"))
		if err == nil {
			err = json.Unmarshal(data, &exp)
		}
		if err != nil {
			t.Fatalf("%s/expect.json: %v", s.Category, err)
		}
		got := map[string]int{
			"prompt_lines": s.PromptLines, "required_ids": s.RequiredIDs, "optional_ids": s.OptionalIDs,
			"bad_prompts": s.BadPrompts, "duplicate_prompt_lines": s.DuplicatePromptLines,
			"old_valid_records": s.OldValidRecords, "old_done_required": s.OldDoneRequired,
			"old_stale_records": s.OldStaleRecords, "old_invalid_lines": s.OldInvalidLines,
		}
		for k, v := range got {
			if e, ok := exp[k].(float64); !ok || int(e) != v {
				t.Fatalf("harness: %s: the checker reads %s = %d, the generator meant %v", s.Category, k, v, exp[k])
			}
		}
		if s.Missing != s.RequiredIDs-s.OldDoneRequired || s.NewLines != 0 {
			t.Fatalf("harness: %s: untouched corpus reads %d missing, %d new lines", s.Category, s.Missing, s.NewLines)
		}
	}
	return root, cats
}

// runCorpus kills the real worker with SIGKILL `kills` times at random
// moments (half the starts with --only on one category in turn, so every
// category is hit, half on all of them), then runs it to completion, then once more
// on the finished root, which must add nothing.
func runCorpus(t *testing.T, root string, cats []string, kills int, seed uint64) {
	t.Helper()
	s := startSim(t, sim.Options{Speed: 10})
	// 200 + finish_reason abort, silent streams and rids held after a
	// disconnect, as SGLang does, besides 503s and resets
	s.SetFaults(sim.Faults{ErrorRate: 0.04, ResetRate: 0.03, AbortRate: 0.04, StallMidStream: 0.02})
	// Every plain start names all categories, odd_ids (objects and arrays
	// as ids) last: a worker that stops on one of those then still shows
	// what it does with the others.
	var order []string
	for _, c := range cats {
		if c != "odd_ids" {
			order = append(order, c)
		}
	}
	if len(order) < len(cats) {
		order = append(order, "odd_ids")
	}
	all := []string{"--concurrency", "8", "--idle-timeout", "2s"}
	for _, c := range order {
		all = append(all, "--only", c)
	}
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	corpusBytes := rawBytes(t, root, cats)
	start := time.Now()
	var finishedEarly, grew int
	for k := 0; k < kills; k++ {
		args := all
		if k%2 == 0 {
			args = []string{"--concurrency", "8", "--idle-timeout", "2s", "--only", cats[(k/2)%len(cats)]}
		}
		before := rawBytes(t, root, cats)
		cmd := workerCmd(t, root, s.URL(), args...)
		var log bytes.Buffer
		cmd.Stdout, cmd.Stderr = &log, &log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(300+rng.IntN(1000)) * time.Millisecond
		if rng.IntN(4) == 0 { // during startup, the resume scan, the first requests
			delay = time.Duration(20+rng.IntN(180)) * time.Millisecond
		}
		time.Sleep(delay)
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		if strings.Contains(log.String(), "All categories finished") {
			finishedEarly++
		}
		if rawBytes(t, root, cats) > before {
			grew++
		}
	}
	t.Logf("%d kills in %s (%d wrote records before the kill, %d had finished their categories)",
		kills, time.Since(start).Round(time.Second), grew, finishedEarly)

	run := func(what string) string {
		cmd := workerCmd(t, root, s.URL(), all...)
		timer := time.AfterFunc(150*time.Second, func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		defer timer.Stop()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v\n%s", what, err, tail(string(out), 40))
		}
		return string(out)
	}
	start = time.Now()
	log := run("final run")
	t.Logf("final run took %s", time.Since(start).Round(time.Second))
	// a prompt the sim's faults (about 13 % of attempts) beat DefaultAttempts
	// times in a row is given up on, as it should be, and the next start
	// redoes it: run again until no prompt is left failed (CI met one in
	// about 50 runs)
	for again := 0; again < 3 && gaveUp.MatchString(log); again++ {
		t.Logf("the final run gave up on %d prompts: it runs again", len(gaveUp.FindAllString(log, -1)))
		log = run("final run, again")
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "WARNING") || strings.Contains(l, "ERROR") || strings.Contains(l, "skipped") || strings.Contains(l, " failed") {
			t.Logf("final run: %s", l)
		}
	}
	if rawBytes(t, root, cats) == corpusBytes {
		t.Fatal("harness: the worker wrote nothing at all: is the sim answering?")
	}
	before := rawBytes(t, root, cats)
	again := run("restart on the finished root")
	if after := rawBytes(t, root, cats); after != before {
		t.Errorf("a restart on the finished root wrote %d more bytes:\n%s", after-before, tail(again, 40))
	}
}

// gaveUp matches the worker's line for a prompt it gave up on.
var gaveUp = regexp.MustCompile(`(?m)^.*: id .* failed: gave up after .*$`)

func rawBytes(t testing.TB, root string, cats []string) int64 {
	var n int64
	for _, c := range cats {
		if st, err := os.Stat(filepath.Join(root, "prepared", c, "raw_responses.jsonl")); err == nil {
			n += st.Size()
		}
	}
	return n
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// corpusSummary is one category's state; the JSON names are those of
// scripts/check_corpus.py, so the two checkers can be compared.
type corpusSummary struct {
	Category             string   `json:"category"`
	PromptLines          int      `json:"prompt_lines"`
	RequiredIDs          int      `json:"required_ids"`
	OptionalIDs          int      `json:"optional_ids"`
	BadPrompts           int      `json:"bad_prompts"`
	DuplicatePromptLines int      `json:"duplicate_prompt_lines"`
	OldValidRecords      int      `json:"old_valid_records"`
	OldInvalidLines      int      `json:"old_invalid_lines"`
	OldDoneRequired      int      `json:"old_done_required"`
	OldStaleRecords      int      `json:"old_stale_records"`
	TornTail             bool     `json:"torn_tail"`
	NewLines             int      `json:"new_lines"`
	NewInvalidLines      int      `json:"new_invalid_lines"`
	Missing              int      `json:"missing"`
	DuplicateIDs         int      `json:"duplicate_ids"`
	ExtraRecords         int      `json:"extra_records"`
	StrayNewRecords      int      `json:"stray_new_records"`
	Aborts               int      `json:"aborts"`
	WrongCategory        int      `json:"wrong_category"`
	OptionalDone         int      `json:"optional_done"`
	Examples             []string `json:"examples"`
	OK                   bool     `json:"ok"`
}

// checkCorpus checks every category of root against the untouched corpus
// (to tell the lines the worker added from the old ones) and logs a table.
func checkCorpus(t testing.TB, root, corpus string, cats []string) []corpusSummary {
	t.Helper()
	var out []corpusSummary
	t.Logf("%-11s %7s %6s %7s %9s %7s %6s %6s %6s", "category", "prompts", "old", "new", "missing", "dupids", "extra", "stray", "abort")
	for _, c := range cats {
		s := checkCategory(t, c, filepath.Join(root, "prepared", c), filepath.Join(corpus, c))
		t.Logf("%-11s %7d %6d %7d %9d %7d %6d %6d %6d", c, s.RequiredIDs, s.OldValidRecords, s.NewLines, s.Missing, s.DuplicateIDs, s.ExtraRecords, s.StrayNewRecords, s.Aborts)
		out = append(out, s)
	}
	return out
}

var bom = []byte("\ufeff")

// corpusLines splits a file on '\n' only (U+2028 is not a line end), without
// a BOM at the start; tail is what follows the last newline.
func corpusLines(data []byte) (lines [][]byte, tail []byte) {
	data = bytes.TrimPrefix(data, bom)
	parts := bytes.Split(data, []byte{'\n'})
	return parts[:len(parts)-1], parts[len(parts)-1]
}

func readOrEmpty(t testing.TB, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}

// corpusRecord decodes a line that is exactly one JSON object with a non-null
// "id" (the key exactly), returning the id's canonical form.
func corpusRecord(line []byte) (key string, rec map[string]any, ok bool) {
	line = bytes.Trim(line, " \t\r\n")
	if len(line) == 0 || !utf8.Valid(line) { // Python decodes strictly
		return "", nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return "", nil, false
	}
	if _, err := dec.Token(); err != io.EOF { // nothing may follow the value
		return "", nil, false
	}
	m, isObj := v.(map[string]any)
	if !isObj || m["id"] == nil {
		return "", nil, false
	}
	key, err := canonJSON(m["id"])
	if err != nil {
		return "", nil, false
	}
	return key, m, true
}

// canonJSON is a JSON value's identity: strings after unescaping, numbers
// by exact rational value, objects with sorted keys.
func canonJSON(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return "s" + strconv.Quote(x), nil
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return "", fmt.Errorf("number %s", x)
		}
		return "n" + r.RatString(), nil
	case bool:
		return "b" + strconv.FormatBool(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			c, err := canonJSON(e)
			if err != nil {
				return "", err
			}
			parts[i] = c
		}
		return "a[" + strings.Join(parts, ",") + "]", nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			c, err := canonJSON(x[k])
			if err != nil {
				return "", err
			}
			parts[i] = strconv.Quote(k) + ":" + c
		}
		return "o{" + strings.Join(parts, ",") + "}", nil
	}
	return "", fmt.Errorf("null")
}

// required: strings and numbers must be done; objects, arrays and booleans
// may be rejected as bad prompts (but never done twice).
func requiredID(key string) bool { return key[0] == 's' || key[0] == 'n' }

func checkCategory(t testing.TB, cat, dir, corpusCat string) corpusSummary {
	s := corpusSummary{Category: cat}
	prompts, ptail := corpusLines(readOrEmpty(t, filepath.Join(dir, "prompts.jsonl")))
	if len(bytes.Trim(ptail, " \t\r\n")) > 0 {
		prompts = append(prompts, ptail)
	}
	ids, opt := map[string]bool{}, map[string]bool{}
	for _, l := range prompts {
		if len(bytes.Trim(l, " \t\r\n")) == 0 {
			continue
		}
		s.PromptLines++
		k, _, ok := corpusRecord(l)
		if !ok {
			s.BadPrompts++
			continue
		}
		if ids[k] || opt[k] {
			s.DuplicatePromptLines++
		}
		if requiredID(k) {
			ids[k] = true
		} else {
			opt[k] = true
		}
	}
	s.RequiredIDs, s.OptionalIDs = len(ids), len(opt)

	oldLines, oldTail := corpusLines(readOrEmpty(t, filepath.Join(corpusCat, "raw_responses.jsonl")))
	old := map[string]int{}
	for _, l := range oldLines {
		old[string(l)]++
	}
	if len(oldTail) > 0 {
		old[string(oldTail)]++ // a worker may end the torn line instead of cutting it
		s.OldInvalidLines++
	}
	oldDone := map[string]bool{}
	for _, l := range oldLines {
		k, _, ok := corpusRecord(l)
		switch {
		case !ok:
			s.OldInvalidLines++
		case ids[k] || opt[k]:
			s.OldValidRecords++
			oldDone[k] = true
		default:
			s.OldValidRecords++
			s.OldStaleRecords++
		}
	}
	for k := range oldDone {
		if ids[k] {
			s.OldDoneRequired++
		}
	}

	lines, rtail := corpusLines(readOrEmpty(t, filepath.Join(dir, "raw_responses.jsonl")))
	s.TornTail = len(rtail) > 0
	counts := map[string]int{}
	heads := map[string][]string{} // the start of each record of an id, for the report
	var ex []string
	for _, l := range lines {
		isNew := true
		if old[string(l)] > 0 {
			old[string(l)]--
			isNew = false
		} else {
			s.NewLines++
		}
		k, rec, ok := corpusRecord(l)
		if !ok {
			if isNew {
				s.NewInvalidLines++
				ex = append(ex, fmt.Sprintf("new line is not a whole JSON record: %.80q", l))
			}
			continue
		}
		counts[k]++
		head := l[:min(len(l), 60)]
		if i := bytes.Index(head, []byte(`,"category"`)); i > 0 {
			head = head[:i]
		}
		heads[k] = append(heads[k], fmt.Sprintf("%s%q", map[bool]string{true: "new ", false: "old "}[isNew], head))
		if rec["finish_reason"] == "abort" {
			s.Aborts++
			ex = append(ex, fmt.Sprintf("record with finish_reason abort: %.80q", l))
		}
		if isNew {
			if !ids[k] && !opt[k] {
				s.StrayNewRecords++
				ex = append(ex, "new record for an id no prompt has: "+k)
			}
			if rec["category"] != cat {
				s.WrongCategory++
			}
		}
	}
	var missing, dups []string
	for k := range ids {
		if counts[k] == 0 {
			missing = append(missing, k)
		}
	}
	for _, set := range []map[string]bool{ids, opt} {
		for k := range set {
			if counts[k] > 1 {
				dups = append(dups, k)
				s.ExtraRecords += counts[k] - 1
			}
		}
	}
	for k := range opt {
		if counts[k] == 1 {
			s.OptionalDone++
		}
	}
	sort.Strings(missing)
	sort.Strings(dups)
	s.Missing, s.DuplicateIDs = len(missing), len(dups)
	for _, k := range missing[:min(3, len(missing))] {
		ex = append(ex, "missing "+k)
	}
	for _, k := range dups[:min(3, len(dups))] {
		ex = append(ex, fmt.Sprintf("%s has %d records: %s", k, counts[k], strings.Join(heads[k], " ")))
	}
	s.Examples = ex[:min(8, len(ex))]
	s.OK = s.Missing == 0 && s.DuplicateIDs == 0 && s.NewInvalidLines == 0 && s.StrayNewRecords == 0 &&
		s.Aborts == 0 && s.WrongCategory == 0 && !s.TornTail
	return s
}

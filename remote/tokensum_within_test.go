package remote

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// pyWrite writes n records as the old script did (json.dumps: timestamps,
// reasoning_content, finish_reason; some counts in usage, some null) to
// p, in mode "a" or "w".
const pyWrite = `import json, random, sys
p, mode, n, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
random.seed(seed)
with open(p, mode) as f:
    for i in range(n):
        r = {"id": "c-%d-%d" % (seed, i), "timestamp": 1764900000.25 + i,
             "reasoning_content": "think " * random.randint(0, 120),
             "content": "answer " * random.randint(0, 120),
             "finish_reason": random.choice(["stop", "length"])}
        tok = random.randint(1, 4000)
        if i % 13 == 5:
            r["completion_tokens"] = None
        elif i % 3 == 0:
            r["usage"] = {"prompt_tokens": 20, "completion_tokens": tok}
        else:
            r["completion_tokens"] = tok
        f.write(json.dumps(r) + "\n")
`

// pyCount is the file's records, tokens and unknown counts by Python's
// json module: the top level's completion_tokens, else usage's.
const pyCount = `import json, sys
recs = toks = unk = 0
for ln in open(sys.argv[1]):
    r = json.loads(ln)
    recs += 1
    n = r.get("completion_tokens")
    if n is None:
        n = (r.get("usage") or {}).get("completion_tokens")
    if isinstance(n, int):
        toks += n
    else:
        unk += 1
print(recs, toks, unk)
`

func python3(t *testing.T) string {
	t.Helper()
	return testgate.Tool(t, "python3", "writing and counting the records")
}

func pyRun(t *testing.T, prog string, args ...string) string {
	t.Helper()
	out, err := exec.Command(python3(t), append([]string{"-c", prog}, args...)...).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// tLine reads range 1's T line (records tokens bytes unknown) and
// whether a P line says the time ran out in it.
func tLine(t *testing.T, out []byte) (v [4]int64, cut bool) {
	t.Helper()
	seen := false
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 6 && f[0] == "1" && f[1] == "T":
			for i := range v {
				v[i], _ = strconv.ParseInt(f[2+i], 10, 64)
			}
			seen = true
		case len(f) == 2 && f[0] == "1" && f[1] == "P":
			cut = true
		}
	}
	if !seen {
		t.Fatalf("no T line in %q", out)
	}
	return v, cut
}

// laptop asks for p's sums as the pipeline does: from where the last
// answer reached (the first from 0), each answer within budget, until
// one is not cut; it returns records, tokens and unknown added up, and
// the answers that were cut.
func laptop(t *testing.T, ts *tokenSums, p, budget string, from int64, sum [3]int64) ([3]int64, int) {
	t.Helper()
	cuts := 0
	for range 100000 {
		fi, err := os.Stat(p)
		must(t, err)
		v, cut := tLine(t, ts.ranges([]string{p, fmt.Sprint(from + 1), fmt.Sprint(fi.Size() - from), "within=" + budget}))
		sum[0], sum[1], sum[2] = sum[0]+v[0], sum[1]+v[1], sum[2]+v[3]
		from += v[2]
		if !cut {
			if from != fi.Size() {
				t.Fatalf("the last answer reached byte %d of %d", from, fi.Size())
			}
			return sum, cuts
		}
		cuts++
	}
	t.Fatal("never summed whole")
	return sum, cuts
}

func pySums(t *testing.T, p string) [3]int64 {
	var w [3]int64
	if _, err := fmt.Sscan(pyRun(t, pyCount, p), &w[0], &w[1], &w[2]); err != nil {
		t.Fatal(err)
	}
	return w
}

// A dashboard's sums within a time budget (within=): a big file is
// answered over several requests, each cut where its time ran out and
// going on from there, and what they add up to is Python's count; the
// kept sums reach the file's end, so the next dashboard's first answer
// is whole at once.
func TestTokenSumsWithinAddUp(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	pyRun(t, pyWrite, p, "w", "12000", "1") // ~20 MB
	ts := newTokenSums()
	got, cuts := laptop(t, ts, p, "2ms", 0, [3]int64{})
	if want := pySums(t, p); got != want {
		t.Fatalf("the answers add up to %v (records, tokens, unknown), Python counts %v", got, want)
	}
	t.Logf("%d answers cut", cuts)
	if cuts < 2 {
		t.Fatalf("%d answers cut by a 2 ms budget on a %d-byte file: the budget was not kept", cuts, fileSize(t, p))
	}
	if k := ts.files[p]; k == nil || k.Off != fileSize(t, p) {
		t.Fatalf("kept %+v, want the file's end", k)
	}
	ts.flush() // the agent ends, writing what it kept
	again, cuts := laptop(t, newTokenSums(), p, "2ms", 0, [3]int64{})
	if again != got || cuts != 0 {
		t.Fatalf("from the kept sums: %v with %d cuts, want %v at once", again, cuts, got)
	}
}

// A file cut or replaced between two answers cut by the budget is summed
// again from 0 when the laptop, whose count saw the reset, asks from 0:
// the kept offset of the old file is not believed.
func TestTokenSumsWithinRedoneAfterCutOrReplace(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	for _, how := range []string{"cut", "replaced"} {
		t.Run(how, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
			pyRun(t, pyWrite, p, "w", "8000", "2")
			ts := newTokenSums()
			fi, _ := os.Stat(p)
			v, cut := tLine(t, ts.ranges([]string{p, "1", fmt.Sprint(fi.Size()), "within=1ms"}))
			if !cut || v[2] >= fi.Size() {
				t.Fatalf("the first answer was not cut: %v", v)
			}
			switch how {
			case "cut": // rewritten in place, shorter than what was summed
				pyRun(t, pyWrite, p, "w", "40", "3")
			case "replaced":
				pyRun(t, pyWrite, p+".new", "w", "9000", "4")
				must(t, os.Rename(p+".new", p))
			}
			got, _ := laptop(t, ts, p, "1ms", 0, [3]int64{})
			if want := pySums(t, p); got != want {
				t.Fatalf("after the file was %s: %v, Python counts %v", how, got, want)
			}
		})
	}
}

// The budget rides as an argument the awk (tokens.sh, the fallback's)
// and an agent of an older protocol ignore: they read whole FILE FROM N
// triples only, and answer whole.
func TestTokenSumsWithinIgnoredByTheAwk(t *testing.T) {
	p := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	pyRun(t, pyWrite, p, "w", "3000", "5")
	size := fmt.Sprint(fileSize(t, p))
	out, err := exec.Command("sh", "-c", HostScript("tokens.sh"), "synthwatch-tokens", p, "1", size, "within=1ms").Output()
	must(t, err)
	v, cut := tLine(t, out)
	want := pySums(t, p)
	// the awk reads the top level's completion_tokens only: usage's are unknown to it
	if cut || v[0] != want[0] || fmt.Sprint(v[2]) != size {
		t.Fatalf("the awk with a budget: %v (cut %v), want every one of %d records over %s bytes", v, cut, want[0], size)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	must(t, err)
	return fi.Size()
}

// After a cut answer the agent sums on in the background to the range's
// end (tokensum_ahead.go), whatever other file it is asked to sum
// meanwhile: the next request, asked from where the answer reached once
// that is done, is answered whole at once, and the two add up to
// Python's count.
func TestTokenSumsWithinGoOnBetweenRequests(t *testing.T) {
	ts, p, size, v, a := cutAnswer(t, "6")
	// a sum of another file (a growing category's count) leaves it going
	q := filepath.Join(t.TempDir(), "raw_responses.jsonl")
	pyRun(t, pyWrite, q, "w", "20", "7")
	ts.ranges([]string{q, "1", fmt.Sprint(fileSize(t, q))})
	ts.mu.Lock()
	still := ts.ahead
	ts.mu.Unlock()
	if still != a {
		t.Fatal("a sum of another file stopped the range summed on")
	}
	<-a.done // the laptop's round trip, however long
	w, cut := tLine(t, ts.ranges([]string{p, fmt.Sprint(v[2] + 1), fmt.Sprint(size - v[2]), "within=1ms"}))
	if cut || v[2]+w[2] != size {
		t.Fatalf("the next answer reached byte %d of %d (cut %v): what was summed meanwhile was not taken", v[2]+w[2], size, cut)
	}
	if got, want := [3]int64{v[0] + w[0], v[1] + w[1], v[3] + w[3]}, pySums(t, p); got != want {
		t.Fatalf("the two answers add up to %v, Python counts %v", got, want)
	}
	if k := ts.files[p]; k == nil || k.Off != size {
		t.Fatalf("kept %+v, want the file's end", k)
	}
}

// A whole sum from 0 after a cut answer (a token budget's, which must be
// whole in the same poll: pipeline's SumHoles) takes the range summed on
// from the cut: the kept sums reach where it began. It is stopped, not
// left summing the same bytes beside the request, and the whole answer
// is Python's count.
func TestTokenSumsWholeAfterCutTakesTheRangeSummedOn(t *testing.T) {
	ts, p, size, _, a := cutAnswer(t, "8")
	w, cut := tLine(t, ts.ranges([]string{p, "1", fmt.Sprint(size)}))
	ts.mu.Lock()
	left := ts.ahead
	ts.mu.Unlock()
	if left != nil || !a.stop.Load() {
		t.Fatalf("the range summed on from byte %d was left running beside the whole sum (%+v)", a.from, left)
	}
	if cut || w[2] != size {
		t.Fatalf("the whole answer reached byte %d of %d (cut %v)", w[2], size, cut)
	}
	if got, want := [3]int64{w[0], w[1], w[3]}, pySums(t, p); got != want {
		t.Fatalf("the whole answer is %v, Python counts %v", got, want)
	}
}

// cutAnswer is a file of 8,000 records as Python writes them (seed), asked
// whole within 1 ms: the cut answer's line v, and the range the agent
// sums on from where it reached.
func cutAnswer(t *testing.T, seed string) (ts *tokenSums, p string, size int64, v [4]int64, a *aheadSum) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	p = filepath.Join(t.TempDir(), "raw_responses.jsonl")
	pyRun(t, pyWrite, p, "w", "8000", seed)
	size = fileSize(t, p)
	ts = newTokenSums()
	v, cut := tLine(t, ts.ranges([]string{p, "1", fmt.Sprint(size), "within=1ms"}))
	ts.mu.Lock()
	a = ts.ahead
	ts.mu.Unlock()
	if !cut || a == nil || a.from != v[2] {
		t.Fatalf("a cut answer to byte %d of %d (cut %v) left no range summed on from there: %+v", v[2], size, cut, a)
	}
	return ts, p, size, v, a
}

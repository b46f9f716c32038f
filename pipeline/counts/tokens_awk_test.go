package counts

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testawk"
)

// TestTokenSumEveryAwk is the host sum against the Go tally, byte for byte,
// under every awk found: the same records, tokens, records with unknown
// tokens and runs, and the same end of the last whole line, over ranges
// that start at a line and end anywhere (mid-line too), several in one
// exec as a poll sends them.
func TestTokenSumEveryAwk(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 11))
	p := filepath.Join(t.TempDir(), "raw with space.jsonl")
	data := mixedRecords(rng, 0, 300)
	write(t, p, data)
	starts := []int{0}
	for i := 0; i < len(data)-1; i++ {
		if data[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	var jobs []*Job
	for range 12 {
		from := starts[rng.IntN(len(starts))]
		jobs = append(jobs, &Job{path: p, from: int64(from), n: int64(1 + rng.IntN(len(data)-from))})
	}
	jobs = append(jobs, &Job{path: p, from: 0, n: int64(len(data))})
	wants := make([]tally, len(jobs))
	wantBytes := make([]int64, len(jobs))
	for i, j := range jobs {
		r := data[j.from : j.from+j.n]
		whole := r[:strings.LastIndexByte(r, '\n')+1]
		wantBytes[i] = int64(len(whole))
		for _, l := range strings.Split(strings.TrimSuffix(whole, "\n"), "\n") {
			tallyLine(&wants[i], []byte(l), 0, time.UTC)
		}
	}
	if all := wants[len(wants)-1]; all.Unknown < 20 || all.Tokens == 0 || len(all.byRun) < 3 {
		t.Fatalf("the records do not exercise the sum: %+v", all)
	}
	path := os.Getenv("PATH")
	for name, dir := range testawk.Dirs(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", dir+string(os.PathListSeparator)+path)
			res, err := sumOnHost(t.Context(), localHost(), jobs, nil)
			must(t, err)
			for i := range jobs {
				if res[i].err != "" || !equalTally(res[i].t, wants[i]) || res[i].bytes != wantBytes[i] {
					t.Errorf("range %d [%d,+%d): %s says %+v over %d bytes (%q); the Go tally %+v over %d",
						i, jobs[i].from, jobs[i].n, name, res[i].t, res[i].bytes, res[i].err, wants[i], wantBytes[i])
				}
			}
		})
	}
}

// A range that reaches past the file's end (the file was cut and written
// again between the count and the sum) ends, as every range does, at the
// last newline it read: an unterminated last line is a record still being
// written, under every awk, wherever the range stops.
func TestTokenSumPastTheEndLeavesAnUnterminatedLine(t *testing.T) {
	dir := t.TempDir()
	whole := `{"id": "a", "completion_tokens": 7}` + "\n"
	torn := `{"id": "b", "completion_tokens": 9}`
	cases := map[string]string{
		"torn":        whole + torn,
		"only torn":   torn,
		"whole":       whole,
		"empty":       "",
		"torn spaces": whole + "   ",
	}
	var jobs []*Job
	var names []string
	for name, data := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		write(t, p, data)
		jobs = append(jobs, &Job{path: p, n: int64(len(data)) + 100})
		names = append(names, name)
	}
	path := os.Getenv("PATH")
	for name, awkDir := range testawk.Dirs(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", awkDir+string(os.PathListSeparator)+path)
			res, err := sumOnHost(t.Context(), localHost(), jobs, nil)
			must(t, err)
			for i, c := range names {
				data := cases[c]
				var want tally
				wantBytes := int64(strings.LastIndexByte(data, '\n') + 1)
				if wantBytes > 0 {
					tallyLine(&want, []byte(strings.TrimSuffix(data[:wantBytes], "\n")), 0, time.UTC)
				}
				if res[i].err != "" || !equalTally(res[i].t, want) || res[i].bytes != wantBytes {
					t.Errorf("%s: %s says %+v over %d bytes (%q); want %+v over %d", c, name, res[i].t, res[i].bytes, res[i].err, want, wantBytes)
				}
			}
		})
	}
}

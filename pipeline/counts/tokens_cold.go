package counts

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// coldSumScript names, in the cold batch of a poll no other follows
// (Options.OnePoll), the sum of the tokens of every category's
// raw_responses.jsonl the cold count leaves to the host (bigger than
// ABOVE): what sumHolesNow would otherwise ask in an exec of its own after
// the answer, two round trips more for a `status`. A dashboard's first
// table does not wait for it: its counts at once, its tokens the poll
// after, asked at once. Only the Go agent gets
// it, and answers it in Go (remote/tokensum.go: one stat a file, each
// summed from 0 to that size, stderr "I SIZE PATH" per range, so each sum
// is matched to the count's hole by path and size); the fallback's
// one-shot counts only. Run by a shell, it sums nothing and says so.
const coldSumScript = `echo "synthwatch-tokens-cold: answered by the Go agent alone" >&2; exit 70`

// coldSumArgv is the cold batch's exec of coldSumScript over the prepared
// folder, for files above the cold count's threshold.
func (k *Set) coldSumArgv(above int64, within time.Duration) []string {
	argv := []string{"sh", "-c", coldSumScript, "synthwatch-tokens-cold", k.lay.Prepared(), parse.RawFile, strconv.FormatInt(above, 10)}
	if within > 0 {
		argv = append(argv, "within="+within.String())
	}
	return argv
}

// FirstSumWithin is the agent's time budget for a dashboard's first
// table's token sums: a root it summed before answers at once; a night no
// dashboard watched delays the first table by this, then says
// "summing… N %" and sums on (SumWithin a poll).
const FirstSumWithin = 100 * time.Millisecond

// coldKey is a file and its line count, as the cold sum's script names
// each job.
type coldKey struct {
	path string
	n    int64
}

// coldIndex reads the script's "I N PATH" lines: each job's place in its
// sums.
func coldIndex(stderr []byte) map[coldKey]int {
	idx := map[coldKey]int{}
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		if len(f) != 3 {
			continue
		}
		i, err1 := strconv.Atoi(f[0])
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil {
			idx[coldKey{f[2], n}] = i
		}
	}
	return idx
}

// coldSums are the sums the cold batch ran (ask), by path: those whose
// range is exactly a job's stand for it (nil when the batch ran none).
func coldSums(ask *remote.ExecAsk, jobs []*Job) map[*Job]tokResult {
	r, ok := ask.Result()
	if !ok || r.ExitCode != 0 {
		return nil
	}
	idx := coldIndex(r.Stderr)
	if len(idx) == 0 {
		return nil
	}
	sums, err := parseTokenSums(r.Stdout, len(idx))
	if err != nil {
		return nil
	}
	out := map[*Job]tokResult{}
	for _, j := range jobs {
		if i, ok := idx[coldKey{j.path, j.n}]; ok && j.from == 0 && i >= 1 && i <= len(sums) && sums[i-1].err == "" {
			out[j] = sums[i-1]
		}
	}
	return out
}

// foldCold folds a dashboard's first poll's cold sums: a hole the agent
// answered (whole, or cut at its budget) takes its answer; one it did not
// (a file that grew between the count and the sum) waits for the next
// poll's job. only: those categories' (nil: every one's).
func (k *Set) foldCold(cold func([]*Job) map[*Job]tokResult, only func(*catState) bool) {
	jobs := k.tokenJobsOf(-1, only)
	answered := cold(jobs)
	sums := make([]tokResult, len(jobs))
	for _, j := range jobs {
		if r, ok := answered[j]; ok {
			sums[j.resIndex] = r
		}
	}
	for _, c := range k.cats {
		if only != nil && !only(c) {
			continue
		}
		if j := c.tok.job; j != nil {
			if _, ok := answered[j]; !ok {
				c.tok.job = nil
			}
		}
	}
	k.foldTokens(remote.PollResult{}, jobs, sums, nil)
}

package counts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// Job is one byte range of a raw_responses.jsonl to sum on the host.
type Job struct {
	path     string
	from, n  int64
	gen      int
	resIndex int
	then     *remote.ThenAsk // a steady count's sum on the host (askCounts), read by lateSum
}

// tokResult is the host's sum of one job: the whole lines in its range
// (bytes: how far they reach from its start).
type tokResult struct {
	t     tally
	bytes int64
	err   string
	timed bool // the agent sent its run-less records' times (eras.go)
	cut   bool // the agent stopped at the request's time budget ("I P"): the rest next poll
}

// tokenSumScript sums the records' completion tokens and counts them per
// run over byte ranges of files, all files in one exec, in awk
// (remote/host/tokens.sh): "i T records tokens bytes unknown" per range
// and "i R records tokens unknown run" per run. A record with no whole count of
// completion tokens is unknown: counted apart, as parse's HasTokens false
// is (see TestTokenSumMatchesFullDecode). Files and numbers are
// arguments, never inside the script.
var tokenSumScript = remote.HostScript("tokens.sh")

// sumOnHost runs the jobs in one exec: the poll's batch's (ask), or,
// when it did not answer, one of its own.
func sumOnHost(ctx context.Context, h remote.Host, jobs []*Job, ask *remote.ExecAsk) ([]tokResult, error) {
	r, ok := ask.Result()
	var err error
	if !ok {
		r, err = h.Exec(ctx, tokenArgv(jobs, 0)...)
	}
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	}
	if err != nil {
		return nil, fmt.Errorf("sum tokens on the host: %w", err)
	}
	res, err := parseTokenSums(r.Stdout, len(jobs))
	if err != nil {
		return nil, fmt.Errorf("sum tokens on the host: %w", err)
	}
	return res, nil
}

// tokenArgv is the one exec that sums jobs; within > 0 ends it in the
// agent's time budget ("within=300ms", remote/tokensum.go), which the
// awk and an older agent ignore: they sum whole.
func tokenArgv(jobs []*Job, within time.Duration) []string {
	argv := []string{"sh", "-c", tokenSumScript, "synthwatch-tokens"}
	for _, j := range jobs {
		argv = append(argv, j.path, strconv.FormatInt(j.from+1, 10), strconv.FormatInt(j.n, 10))
	}
	if within > 0 && len(jobs) > 0 {
		argv = append(argv, "within="+within.String())
	}
	return argv
}

func parseTokenSums(out []byte, want int) ([]tokResult, error) {
	res := make([]tokResult, want)
	seen := make([]bool, want)
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.SplitN(strings.TrimRight(line, "\r"), " ", 6)
		if len(f) < 2 {
			continue
		}
		i, err := strconv.Atoi(f[0])
		if err != nil || i < 1 || i > want {
			return nil, fmt.Errorf("bad line %q", line)
		}
		r := &res[i-1]
		nums := func(k int) ([]int64, error) {
			if len(f) < k+2 {
				return nil, fmt.Errorf("bad line %q", line)
			}
			v := make([]int64, k)
			for j := range v {
				if v[j], err = strconv.ParseInt(f[2+j], 10, 64); err != nil {
					return nil, fmt.Errorf("bad line %q", line)
				}
			}
			return v, nil
		}
		switch f[1] {
		case "T":
			if err := r.totals(strings.Fields(strings.Join(f[2:], " "))); err != nil {
				return nil, fmt.Errorf("bad line %q: %w", line, err)
			}
			seen[i-1] = true
		case "R":
			if len(f) < 5 {
				return nil, fmt.Errorf("bad line %q", line)
			}
			v, err := nums(3)
			if err != nil {
				return nil, err
			}
			run := ""
			if len(f) == 6 {
				run = f[5]
			}
			r.t.addRun(run, parse.Tally{Records: v[0], Tokens: v[1], Unknown: v[2]})
		case "E", "M":
			if err := r.timesLine(f); err != nil {
				return nil, fmt.Errorf("bad line %q: %w", line, err)
			}
		case "P":
			r.cut = true
		case "!":
			r.err, seen[i-1] = "the host's awk failed", true
		default:
			return nil, fmt.Errorf("bad line %q", line)
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("no answer for range %d of %d", i+1, want)
		}
		res[i].untimed()
	}
	return res, nil
}

// outcomeFields reads a T line's fields (records tokens bytes unknown,
// then stop length abort other none empty, prompt tokens, prompt
// records), each a count, the outcomes adding up to its records.
func outcomeFields(g []string) (parse.Outcomes, error) {
	var v [12]int64
	for j := range g {
		n, err := strconv.ParseInt(g[j], 10, 64)
		if err != nil || n < 0 {
			return parse.Outcomes{}, fmt.Errorf("bad outcome %q", g[j])
		}
		v[j] = n
	}
	o := parse.Outcomes{Records: v[0], Stop: v[4], Length: v[5], Abort: v[6], Other: v[7], None: v[8], Empty: v[9], PromptTokens: v[10], PromptRecords: v[11]}
	if o.Stop+o.Length+o.Abort+o.Other+o.None != o.Records || o.Empty > o.Records || o.PromptRecords > o.Records {
		return parse.Outcomes{}, errors.New("outcomes do not add up")
	}
	return o, nil
}

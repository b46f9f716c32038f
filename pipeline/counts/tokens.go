package counts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// tally is what the records of one file add up to: parse.Tally (records,
// the tokens of those whose count is known, and how many have none, never
// counted as 0 tokens) for the whole file and for each run.
type tally struct {
	parse.Tally                   // the whole file
	byRun       parse.RunRecords  // "" = records with no run (the old script); bounded
	out         parse.Outcomes    // how the file's records ended
	gate        parse.GateTally   // the training-readiness gate's counts
	times       parse.RecordTimes // when its run-less records finished (eras.go)
}

func (t *tally) addRecord(run string, tokens int64, known bool) {
	r := parse.OneRecord(tokens, known)
	t.addRun(run, r)
	t.Tally.Add(r)
}

func (t *tally) addRun(run string, r parse.Tally) { t.byRun.Add(run, r) }

func (t *tally) merge(o tally) {
	t.byRun.Merge(o.byRun)
	t.Tally.Add(o.Tally)
	t.out.Merge(o.out)
	t.gate.Merge(o.gate)
	t.times.Merge(o.times)
}

// tokAcc adds up a raw_responses.jsonl's tokens and runs from the bytes its
// Counter already reads (OnRead), so a poll moves nothing more for them.
// Stretches the Counter counted on the host (a cold start, a burst) were
// never read here: they are a hole, summed on the host by one small exec
// (tokens_host.go) whose answer is a few lines, whatever the file's size.
//
// Offsets: [0, start) is tallied; [start, cur) is the unfinished last line,
// held in partial, or, in a hole, bytes not seen (a job sums them).
type tokAcc struct {
	mu    sync.Mutex // OnRead runs in the poll's goroutines
	reads []tokRead  // handed by OnRead during a poll, folded after it

	gen     int // bumped when the file is counted again from zero
	cur     int64
	start   int64
	partial []byte
	hole    bool
	// ahead holds bytes read while in a hole, from aheadAt to cur: once the
	// job closes the hole exactly at aheadAt, they are tallied here.
	ahead   []byte
	aheadAt int64
	job     *Job   // sent with this poll; its answer comes back with it
	err     string // why the last host sum failed
	holeAt  int64  // where the hole began: its sum's progress is from there (summing.go)
	stuckAt int64  // a hole ending in an unfinished line: no job until cur grows past it
	sum     tally
	max     int64          // the gate's max_length for the lines read here: pipeline.toml's, then the agent's
	hostMax bool           // max is what the agent last judged against (it reads pipeline.toml now)
	loc     *time.Location // the host's zone: a record's zone-less time is read in it
}

type tokRead struct {
	off  int64
	data []byte
}

var errNotCounted = errors.New("not counted in this poll")

const (
	maxPartial = 4 << 20 // a longer unfinished line is left to the host
	maxAhead   = 4 << 20
)

// onRead is the Counter's OnRead: it copies (b is the poll's buffer).
func (a *tokAcc) onRead(off int64, b []byte) {
	a.mu.Lock()
	a.reads = append(a.reads, tokRead{off, bytes.Clone(b)})
	a.mu.Unlock()
}

func (a *tokAcc) reset() {
	a.gen++
	a.cur, a.start, a.partial, a.hole, a.ahead, a.aheadAt = 0, 0, nil, false, nil, 0
	a.job, a.err, a.stuckAt, a.sum, a.holeAt = nil, "", 0, tally{}, 0
}

// fold takes one poll's count of the file: a recount from zero resets the
// tally, the reads are tallied, and bytes counted beyond them (on the host)
// open a hole.
func (a *tokAcc) fold(up remote.CountUpdate, job *Job, res *tokResult) {
	a.mu.Lock()
	reads := a.reads
	a.reads = nil
	a.mu.Unlock()
	if up.Reset || up.Missing && a.cur > 0 {
		a.reset()
	}
	if job != nil && job.gen == a.gen && a.job == job {
		a.job = nil
		a.answer(job, res)
	}
	for _, r := range reads {
		a.read(r.off, r.data)
	}
	if up.Err == nil && !up.Missing && up.Size > a.cur {
		a.openHole(up.Size)
	}
}

// read tallies bytes at off (where the Counter read them).
func (a *tokAcc) read(off int64, data []byte) {
	switch {
	case off < a.cur && off == 0:
		a.reset()
	case off < a.cur:
		return // already seen (cannot happen with one Counter)
	case off > a.cur:
		a.openHole(off)
	}
	if a.hole {
		if a.ahead == nil || a.aheadAt+int64(len(a.ahead)) != off || len(a.ahead)+len(data) > maxAhead {
			a.ahead, a.aheadAt = nil, off
		}
		a.ahead = append(a.ahead, data...)
		a.cur = off + int64(len(data))
		return
	}
	a.cur = off + int64(len(data))
	a.lines(data)
}

// lines tallies the whole lines of partial+data and keeps the rest.
func (a *tokAcc) lines(data []byte) {
	buf := append(a.partial, data...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		tallyLine(&a.sum, buf[:i], a.max, a.loc)
		a.start += int64(i) + 1
		buf = buf[i+1:]
	}
	a.partial = append([]byte(nil), buf...)
	if len(a.partial) > maxPartial {
		a.partial, a.hole, a.holeAt = nil, true, a.start
	}
}

func tallyLine(t *tally, line []byte, maxLength int64, loc *time.Location) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if loc == nil {
		loc = time.Local
	}
	f, at, hasAt, err := parse.ParseRecordFactsAt(line, loc)
	if err != nil {
		return // not a record: counted as a line, not as a record's tokens
	}
	t.addRecord(f.Run, f.CompletionTokens, f.HasTokens)
	t.out.Add(f.Outcome)
	t.out.AddPrompt(f.PromptTokens, f.HasPrompt)
	n, ok := parse.Length(f.CompletionTokens, f.HasTokens, f.PromptTokens, f.HasPrompt)
	t.gate.Add(f.Gate, n, ok, maxLength)
	if f.Run == "" { // the old script's: placed in the server's eras by its time (eras.go)
		t.times.Add(at, hasAt, parse.OneRecord(f.CompletionTokens, f.HasTokens))
	}
}

// openHole marks [start, end) as not seen: the partial line is dropped and
// the host sums from its start.
func (a *tokAcc) openHole(end int64) {
	if !a.hole {
		a.hole, a.partial, a.ahead, a.holeAt = true, nil, nil, a.start
	}
	a.cur = max(a.cur, end)
}

// nextJob is the range to sum on the host, or nil: the hole through the
// first whole line of the bytes held ahead (so the rest of them can be
// tallied here once it closes), else through what was counted.
func (a *tokAcc) nextJob(path string, most int64) *Job {
	if !a.hole || a.job != nil || most == 0 {
		return nil
	}
	end := a.cur
	if a.ahead != nil && a.aheadAt >= a.start {
		if i := bytes.IndexByte(a.ahead, '\n'); i >= 0 {
			end = a.aheadAt + int64(i) + 1
		}
	}
	if most > 0 && end-a.start > most && a.stuckAt != a.start+most {
		// the rest next poll: the host stops at the range's last whole
		// line (a range that held none, one record past the slice, is
		// asked whole the next time)
		end = a.start + most
	}
	if end <= a.start || end == a.stuckAt {
		return nil
	}
	a.job = &Job{path: path, from: a.start, n: end - a.start, gen: a.gen}
	return a.job
}

// answer folds the host's sum of job: the tally, and the hole's new start
// (the host stops at the last whole line of the range). When that falls
// within the bytes held ahead, the rest of them is tallied here.
func (a *tokAcc) answer(job *Job, res *tokResult) {
	if res == nil || res.err != "" {
		if res != nil {
			a.err = res.err
		}
		return
	}
	a.err = ""
	a.followHostMax(res.t.gate)
	a.sum.merge(res.t)
	a.start = job.from + res.bytes
	switch {
	case a.ahead != nil && a.start >= a.aheadAt && a.start <= a.aheadAt+int64(len(a.ahead)):
		rest := a.ahead[a.start-a.aheadAt:]
		a.hole, a.ahead, a.partial = false, nil, nil
		a.lines(rest)
	case a.start == a.cur:
		a.hole, a.ahead, a.partial = false, nil, nil
	case res.bytes == 0 && !res.cut: // (cut: the agent's time ran out first)
		a.stuckAt = job.from + job.n // an unfinished line: wait for it to grow
	}
}

// Reexamine sums again, through the agent, the files whose tally has
// records the fallback's awk summed (it reads tokens, not how records
// ended nor their prompts): a dashboard that began on the fallback while
// the agent installed would say "not examined" all night. Only a tally
// at rest (no hole, no job, the file ending on a whole line) is redone:
// the hole it opens is summed whole by the next job, from the agent's
// kept sums where it has them.
func (k *Set) Reexamine() {
	for _, c := range k.cats {
		a := &c.tok
		if a.sum.out.Unexamined == 0 && !a.gateStale() || a.hole || a.job != nil || len(a.partial) > 0 || a.cur == 0 {
			continue
		}
		end := a.cur
		a.reset()
		a.openHole(end)
	}
}

// complete says the tally covers every whole line counted so far.
func (a *tokAcc) complete() bool { return !a.hole || a.waitsOnTail() }

// waitsOnTail: the host summed the hole to its last whole line, and what
// is left is an unfinished one (stuckAt: a writer killed mid-record
// leaves it for good). The tally is whole, as a file read here holding
// that line as its partial one; the hole sums on once the file grows.
func (a *tokAcc) waitsOnTail() bool {
	return a.hole && a.err == "" && a.stuckAt == a.cur && a.stuckAt > a.start
}

// TokenJobs are the holes to sum on the host in this poll's batch, at
// most budget bytes of them (< 0: all). The Go agent sums in Go and keeps
// its sums; the fallback's sums are the host's awk over every byte (gawk:
// 83 s for a cold gigabyte), so it sums a slice a poll, and a one-shot
// status by the fallback counts only (FallbackSumPerPoll).
func (k *Set) TokenJobs(budget int64) []*Job {
	return k.tokenJobsOf(budget, nil)
}

// tokenJobsOf is TokenJobs of the categories only names (nil: all).
func (k *Set) tokenJobsOf(budget int64, only func(*catState) bool) []*Job {
	var jobs []*Job
	for _, n := range k.order {
		c := k.cats[n]
		if only != nil && !only(c) {
			continue
		}
		if j := c.tok.nextJob(c.raw.Path, budget); j != nil {
			j.resIndex = len(jobs)
			jobs = append(jobs, j)
			if budget > 0 {
				budget -= j.n
			}
		}
	}
	return jobs
}

// FallbackSumPerPoll: the bytes of holes the fallback's awk sums in one
// poll (mawk about 0.1 s, gawk about 0.7 s on this host).
const FallbackSumPerPoll = 8 << 20

// CapJobs keeps the jobs a poll read by the fallback sums: budget bytes
// of them, the last cut to what is left (the host stops at its last whole
// line). The others are asked again next poll (foldTokens: no answer).
func CapJobs(jobs []*Job, budget int64) []*Job {
	var out []*Job
	for _, j := range jobs {
		if budget <= 0 {
			break
		}
		j.n = min(j.n, budget)
		budget -= j.n
		j.resIndex = len(out)
		out = append(out, j)
	}
	return out
}

// foldTokens folds the counts' reads and the host's sums into each
// category's tally. A poll that failed its sums sends them again next time.
func (k *Set) foldTokens(res remote.PollResult, jobs []*Job, sums []tokResult, sumErr error) {
	byPath := map[string]remote.CountUpdate{}
	for _, u := range res.Counts {
		byPath[u.Path] = u
	}
	for _, n := range k.order {
		c := k.cats[n]
		if !c.tok.hostMax {
			c.tok.max = k.manifest.Gate.MaxLength
		}
		var r *tokResult
		if j := c.tok.job; j != nil {
			switch {
			case sumErr != nil:
				r = &tokResult{err: errText(sumErr)}
			case j.resIndex < len(sums) && j.resIndex < len(jobs) && jobs[j.resIndex] == j:
				r = &sums[j.resIndex]
			}
		}
		up, ok := byPath[c.raw.Path]
		if !ok {
			up = remote.CountUpdate{Err: errNotCounted} // not in this poll: reads wait
		}
		var lj *Job
		var lr *tokResult
		if j := k.thens[n]; j != nil && up.Err == nil && up.Size > j.from && j.gen == c.tok.gen && j.from == c.tok.start {
			lj, lr = lateSum(j, up.Size)
		}
		if lj != nil {
			c.tok.job = nil // the late sum covers the hole's job and what this count added
		}
		c.tok.loc = k.hostZone()
		c.tok.fold(up, c.tok.job, r)
		c.tok.job = nil
		c.tok.late(lj, lr, up.End)
	}
	k.thens = nil
}

// lateSum is the sum the agent ran beside its count on the host of
// [j.from, size), if it ran one (j.then): the batch's answer only.
func lateSum(j *Job, size int64) (*Job, *tokResult) {
	r, n, ok := j.then.Result()
	if !ok || n != size-j.from {
		return nil, nil // read over the link (its reads were tallied), or not counted
	}
	job := &Job{path: j.path, from: j.from, n: n, gen: j.gen}
	res := &tokResult{}
	if r.ExitCode != 0 {
		res.err = fmt.Sprintf("sum tokens on the host: exit %d: %s", r.ExitCode, bytes.TrimSpace(r.Stderr))
	} else if sums, err := parseTokenSums(r.Stdout, 1); err != nil {
		res.err = "sum tokens on the host: " + err.Error()
	} else {
		res = &sums[0]
	}
	return job, res
}

// late folds a sum of exactly the hole this poll's count opened. The
// host sums whole lines: an unfinished last line (a writer's buffered
// block cut mid-record) is taken from end, the file's bytes before cur
// that the count read, so the hole closes with it as the partial line
// instead of waiting for a poll whose count ends on a newline.
func (a *tokAcc) late(job *Job, res *tokResult, end []byte) {
	if job == nil || !a.hole || a.job != nil || job.gen != a.gen || job.from != a.start || job.from+job.n != a.cur {
		return // the file moved otherwise: the hole's own job sums it next poll
	}
	a.answer(job, res)
	if rest := a.cur - a.start; a.hole && a.err == "" && rest > 0 && rest <= int64(len(end)) && bytes.IndexByte(end[int64(len(end))-rest:], '\n') < 0 {
		a.hole, a.ahead, a.stuckAt = false, nil, 0
		a.partial = append([]byte(nil), end[int64(len(end))-rest:]...)
	}
}

// sumHolesNow sums on the host, now, the records the counts left unread,
// for a poll that no other follows (Options.OnePoll).
func (k *Set) sumHolesNow(ctx context.Context, rd remote.Host, cold func([]*Job) map[*Job]tokResult, only func(*catState) bool) {
	jobs := k.tokenJobsOf(-1, only)
	if len(jobs) == 0 {
		return
	}
	sums := make([]tokResult, len(jobs))
	done := cold(jobs)
	var rest []*Job
	for _, j := range jobs {
		if r, ok := done[j]; ok && !r.cut { // cut at the first poll's budget: summed whole now
			sums[j.resIndex] = r
		} else {
			rest = append(rest, j)
		}
	}
	if len(rest) > 0 {
		more, err := sumOnHost(ctx, rd, rest, nil) // asked after the batch: through the agent where it read (Watcher.hostFor)
		for i, j := range rest {
			if err != nil {
				sums[j.resIndex] = tokResult{err: errText(err)}
			} else {
				sums[j.resIndex] = more[i]
			}
		}
	}
	k.foldTokens(remote.PollResult{}, jobs, sums, nil)
}

// DropTokenJobs forgets the sums of a poll that lost the link.
func (k *Set) DropTokenJobs() {
	k.thens = nil
	for _, c := range k.cats {
		c.tok.job = nil
	}
}

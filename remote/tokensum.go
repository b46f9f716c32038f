package remote

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// The Go agent sums tokens itself: a poll's token sums (the pipeline's
// exec of sh -c SCRIPT named synthwatch-tokens, FILE FROM N…, or the cold
// batch's synthwatch-tokens-cold over the prepared folder) are answered
// in Go with parse's record reader, in the awk's output (see
// host/tokens.sh: "I T records tokens bytes unknown", "I R records tokens
// unknown run"), and kept: per file its inode, the end of
// the whole lines summed from byte 0, a hash of the 4 KB before that end,
// and the sums. A file asked again is summed from there; one cut,
// replaced or rewritten (its inode, size or that hash differ) is summed
// again from 0. The sums are kept on disk in the user's cache, so a cold
// status on a root the agent read before reads only what is new.

// A dashboard's request may end in one argument more, "within=300ms"
// (within): the agent then sums until that time has passed, from
// the request's start, and stops after the line it was summing; what it
// summed is kept (a range from 0 goes on from the kept offset next time)
// and answered with how far it reached ("bytes", as any range's), and a
// range it did not finish is followed by "I P". The budget is of time,
// not of bytes:
//
//	| budget           | a host summing 500 MB/s (page cache) | 50 MB/s (cold disk, slow CPU) |
//	| --- | --- | --- |
//	| 256 MB           | an answer in 0.5 s                    | 5 s with no word              |
//	| 300 ms (chosen)  | 150 MB an answer                      | 15 MB an answer, as soon      |
//
// what the user waits for is the answer, and a host's speed varies
// tenfold. Every range sums at least its first whole line, so each answer
// moves on, and the first range cut is summed on in the background until
// the next request (tokensum_ahead.go). An agent of protocol 14 or older, and tokens.sh, read only
// whole FILE FROM N triples: they ignore it and answer whole.

// sumState is one file's kept sums.
type sumState struct {
	Dev, Ino uint64
	Off      int64    // the whole lines summed: [0, Off)
	Tail     [32]byte // sha256 of the (up to) 4 KB before Off
	T        runSums
	ByRun    map[string]runSums
	O        parse.Outcomes     // how the records ended (finish reasons, empty answers)
	G        parse.GateTally    // the training-readiness gate's counts (gatesum.go)
	Times    *parse.RecordTimes // when its run-less records finished (tokentimes.go)
}

type runSums struct{ Records, Tokens, Unknown int64 }

func (r *runSums) add(o runSums) {
	r.Records += o.Records
	r.Tokens += o.Tokens
	r.Unknown += o.Unknown
}

// rangeSum is one range's sums and the bytes of its whole lines.
type rangeSum struct {
	t     runSums
	byRun map[string]runSums
	out   parse.Outcomes
	gate  parse.GateTally
	max   int64 // the gate's max_length for the records read here
	times parse.RecordTimes
	bytes int64
	cut   bool // the request's time ran out before the range's end (within)
}

func (s *rangeSum) line(l []byte) {
	s.bytes += int64(len(l)) + 1
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	f, at, hasAt, err := parse.ParseRecordFactsAt(l, time.Local) // a zone-less time is the host's
	if err != nil {
		return // a line, not a record
	}
	one := runSums{Records: 1}
	if f.HasTokens {
		one.Tokens = f.CompletionTokens
	} else {
		one.Unknown = 1
	}
	s.t.add(one)
	s.out.Add(f.Outcome)
	s.out.AddPrompt(f.PromptTokens, f.HasPrompt)
	s.addGate(f)
	s.addRun(f.Run, one)
	s.noteTime(f, at, hasAt)
}

func (s *rangeSum) merge(o rangeSum) {
	s.t.add(o.t)
	s.out.Merge(o.out)
	s.gate.Merge(o.gate)
	s.times.Merge(o.times)
	s.bytes += o.bytes
	s.cut = s.cut || o.cut
	for _, run := range parse.SortedRuns(o.byRun) { // past the bound, the same runs keep a slot
		s.addRun(run, o.byRun[run])
	}
}

// addRun counts r under run's slot (parse.RunSlot: bounded, and a run
// with a newline never becomes a line of the answer).
func (s *rangeSum) addRun(run string, r runSums) {
	if s.byRun == nil {
		s.byRun = map[string]runSums{}
	}
	k := parse.RunSlot(s.byRun, run)
	x := s.byRun[k]
	x.add(r)
	s.byRun[k] = x
}

// sumSerial sums the whole lines of [from, from+n) of f; once stop says
// so (nil: never; asked every checkEvery bytes, first after the first
// line) it stops after the line it summed, cut (within).
func sumSerial(f *os.File, from, n, maxLength int64, stop func() bool) (rangeSum, error) {
	s := rangeSum{max: maxLength}
	br := bufio.NewReaderSize(io.NewSectionReader(f, from, n), 256<<10)
	var long []byte
	var check int64 // the clock is read every checkEvery bytes, from the first line on
	for {
		l, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, l...)
			continue
		}
		if err == io.EOF {
			return s, nil // an unterminated last line is not summed
		}
		if err != nil {
			return s, err
		}
		if long != nil {
			l = append(long, l...)
			long = nil
		}
		s.line(l[:len(l)-1])
		if stop != nil && s.bytes >= check {
			if s.bytes < n && stop() {
				s.cut = true
				return s, nil
			}
			check = s.bytes + checkEvery
		}
	}
}

// checkEvery: the bytes summed between two reads of the clock (a few
// hundred lines), so a budget costs no clock read per line.
const checkEvery = 256 << 10

// withinPrefix starts a request's time budget (within).
const withinPrefix = "within="

// within is the stop a request's last argument sets: its time passed
// (nil: none).
func within(args []string) func() bool {
	if len(args)%3 != 1 {
		return nil
	}
	v, ok := strings.CutPrefix(args[len(args)-1], withinPrefix)
	d, err := time.ParseDuration(v)
	if !ok || err != nil || d <= 0 {
		return nil
	}
	deadline := time.Now().Add(d)
	return func() bool { return time.Now().After(deadline) }
}

// tokenSums is the agent's kept sums (one per agent process, saved to
// the user's cache after each request that changed them).
type tokenSums struct {
	mu    sync.Mutex
	path  string // the file they are kept in ("" none)
	files map[string]*sumState
	dirty bool
	saved time.Time // when they were last written: at most every saveEvery (tokentimes.go)
	ahead *aheadSum // a cut range summed on in the background (tokensum_ahead.go)
	// summed are the files this agent summed (their report's stamps are
	// kept too: stampkeep.go)
	summed map[string]struct{}
}

func newTokenSums() *tokenSums {
	ts := &tokenSums{files: map[string]*sumState{}}
	if dir, err := os.UserCacheDir(); err == nil {
		ts.path = filepath.Join(dir, "synthwatch", "agent", fmt.Sprintf("sums-%d.json", agentproto.Version))
		ts.load()
	}
	return ts
}

// load reads the kept sums when the file is the user's and not writable by
// others: sums planted by another user would be figures of theirs.
func (ts *tokenSums) load() {
	f, err := os.Open(ts.path)
	for v := agentproto.Version - 1; errors.Is(err, fs.ErrNotExist) && v >= keptSince; v-- {
		f, err = os.Open(filepath.Join(filepath.Dir(ts.path), fmt.Sprintf("sums-%d.json", v)))
	}
	if err != nil {
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	st, ok := fi.Sys().(*syscall.Stat_t)
	if err != nil || !ok || st.Uid != uint32(os.Getuid()) || fi.Mode().Perm()&0o022 != 0 {
		return
	}
	var m map[string]*sumState
	if json.NewDecoder(io.LimitReader(f, 64<<20)).Decode(&m) != nil {
		return
	}
	for p := range m { // files gone since (an old root, a test's) are not kept for ever
		if _, err := os.Stat(p); err != nil || len(m) > maxKeptSums {
			delete(m, p)
		}
	}
	ts.files = m
}

// keptSince is the oldest protocol whose kept sums are this one's: an
// agent with none of its own reads the last one's, so the first
// dashboard after a bump that left them (15: the request's time budget)
// does not sum the whole night again.
const keptSince = 14

// maxKeptSums bounds the files whose sums are kept (a root has tens).
const maxKeptSums = 100000

// save writes the kept sums: a temp file, then renamed.
func (ts *tokenSums) save() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.path == "" || !ts.dirty || !ts.due() {
		return
	}
	ts.dirty = false
	if err := os.MkdirAll(filepath.Dir(ts.path), 0o700); err != nil {
		return
	}
	b, err := json.Marshal(ts.files)
	if err != nil {
		return
	}
	tmp := ts.path + ".tmp-" + strconv.Itoa(os.Getpid())
	if os.WriteFile(tmp, b, 0o600) == nil {
		os.Rename(tmp, ts.path)
	}
}

// tailHash is the hash of the (up to) 4 KB of f before off.
func tailHash(f *os.File, off int64) [32]byte {
	n := min(off, 4096)
	b := make([]byte, n)
	f.ReadAt(b, off-n)
	return sha256.Sum256(b)
}

// sum answers one range of p, from the kept sums where they reach it and
// what ahead summed on past them (tokensum_ahead.go), summed until stop
// (nil: to its end).
func (ts *tokenSums) sum(p string, from, n int64, stop func() bool, ahead *aheadSum) (rangeSum, error) {
	f, err := openRegular(p)
	if err != nil {
		return rangeSum{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return rangeSum{}, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	maxLength := ts.gateMax(p)
	ts.mu.Lock()
	kept := ts.files[p]
	ts.noteSummed(p)
	ts.mu.Unlock()
	if kept != nil && (st == nil || !keptGate(kept, maxLength) || kept.Dev != uint64(st.Dev) || kept.Ino != st.Ino || fi.Size() < kept.Off || tailHash(f, kept.Off) != kept.Tail) {
		kept = nil // cut, replaced or rewritten: summed again from 0
	}
	keptT, kept := ts.timesOf(p, kept, from)
	var out rangeSum
	switch {
	case kept != nil && from == 0 && kept.Off <= n:
		d, err := ahead.sumOn(p, f, st, kept.Off, n-kept.Off, maxLength, stop)
		if err != nil {
			return rangeSum{}, err
		}
		out = rangeSum{t: kept.T, byRun: copyRuns(kept.ByRun), out: kept.O, gate: kept.G, times: keptT, bytes: kept.Off}
		out.merge(d)
	case kept != nil && from > 0 && kept.Off == from:
		if out, err = ahead.sumOn(p, f, st, from, n, maxLength, stop); err != nil {
			return rangeSum{}, err
		}
		all := rangeSum{t: kept.T, byRun: copyRuns(kept.ByRun), out: kept.O, gate: kept.G, bytes: kept.Off}
		all.merge(out) // its times are the range's: keepOn adds them to kept's
		ts.keepOn(p, f, st, kept, all)
		return out, nil
	default:
		if out, err = sumRange(f, from, n, maxLength, stop); err != nil {
			return rangeSum{}, err
		}
		if !keepsFrom0(from, out, kept) {
			return out, nil
		}
	}
	ts.keep(p, f, st, out)
	return out, nil
}

// keepsFrom0 says a range summed afresh is kept: from 0 (else nothing
// to keep it on), unless it is a cut slice short of the valid kept sums.
func keepsFrom0(from int64, out rangeSum, kept *sumState) bool {
	return from == 0 && (!out.cut || kept == nil)
}

func (ts *tokenSums) keep(p string, f *os.File, st *syscall.Stat_t, all rangeSum) {
	if st == nil {
		return
	}
	s := &sumState{Dev: uint64(st.Dev), Ino: st.Ino, Off: all.bytes, Tail: tailHash(f, all.bytes), T: all.t, ByRun: copyRuns(all.byRun), O: all.out, G: all.gate, Times: ptrTimes(all.times.Clone())}
	ts.mu.Lock()
	ts.files[p] = s
	ts.dirty = true
	ts.mu.Unlock()
}

func copyRuns(m map[string]runSums) map[string]runSums {
	out := rangeSum{byRun: make(map[string]runSums, min(len(m), parse.MaxRecordRuns+2))}
	for _, k := range parse.SortedRuns(m) { // through the bound: kept sums of an older build may hold more
		out.addRun(k, m[k])
	}
	return out.byRun
}

// write prints s as range i, as the awk does, and after the awk's fields
// the outcomes, which the awk does not read: stop length abort other
// none empty, then the prompt tokens and the records that gave them
// (pipeline's parseTokenSums), then the gate's counts (writeGate).
func (s rangeSum) write(w *bytes.Buffer, i int) {
	o := s.out
	fmt.Fprintf(w, "%d T %d %d %d %d %d %d %d %d %d %d %d %d", i, s.t.Records, s.t.Tokens, s.bytes, s.t.Unknown, o.Stop, o.Length, o.Abort, o.Other, o.None, o.Empty, o.PromptTokens, o.PromptRecords)
	s.writeGate(w)
	for _, r := range parse.SortedRuns(s.byRun) {
		x := s.byRun[r]
		fmt.Fprintf(w, "%d R %d %d %d %s\n", i, x.Records, x.Tokens, x.Unknown, r)
	}
	s.writeTimes(w, i)
}

// ranges answers "FILE FROM N… [within=D]" (FROM 1-based, as tail -c
// +FROM): a range the time ran out in is followed by "I P" (within).
func (ts *tokenSums) ranges(args []string) []byte {
	var out bytes.Buffer
	stop := within(args)
	ahead := ts.takeAhead(args) // what it summed serves this request's range from where it began
	var next *aheadFrom
	for i := 0; i+3 <= len(args); i += 3 {
		from, err1 := strconv.ParseInt(args[i+1], 10, 64)
		n, err2 := strconv.ParseInt(args[i+2], 10, 64)
		s, err := ts.sum(args[i], from-1, n, stop, ahead)
		if err1 != nil || err2 != nil || err != nil || from < 1 || n < 0 {
			fmt.Fprintf(&out, "%d ! sum failed\n", i/3+1)
			continue
		}
		s.write(&out, i/3+1)
		if s.cut {
			fmt.Fprintf(&out, "%d P\n", i/3+1)
			if next == nil {
				next = &aheadFrom{args[i], from - 1 + s.bytes, from - 1 + n}
			}
		}
	}
	ts.save()
	ts.goAhead(next)
	return out.Bytes()
}

// cold answers the cold batch's sums: every DIR/*/NAME above ABOVE bytes,
// from 0 to its size, "I SIZE PATH" on stderr for each.
func (ts *tokenSums) cold(dir, name string, above int64, rest []string) (stdout, stderr []byte) {
	var args []string
	var errb bytes.Buffer
	for _, d := range subdirs(dir) {
		p := dir + "/" + d + "/" + name
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() <= above {
			continue
		}
		fmt.Fprintf(&errb, "%d %d %s\n", len(args)/3+1, fi.Size(), p)
		args = append(args, p, "1", strconv.FormatInt(fi.Size(), 10))
	}
	if len(args) == 0 {
		return nil, errb.Bytes()
	}
	if len(rest) == 1 && strings.HasPrefix(rest[0], withinPrefix) { // a dashboard's first poll: its time budget (within)
		args = append(args, rest[0])
	}
	return ts.ranges(args), errb.Bytes()
}

// answerSums answers argv in Go when it is one of the pipeline's token
// sums (ok false otherwise: it runs as any command).
func (ts *tokenSums) answerSums(argv []string) (stdout, stderr []byte, ok bool) {
	if len(argv) < 4 || argv[0] != "sh" || argv[1] != "-c" {
		return nil, nil, false
	}
	switch argv[3] {
	case "synthwatch-tokens":
		return ts.ranges(argv[4:]), nil, true
	case "synthwatch-tokens-cold":
		if len(argv) < 7 {
			return nil, nil, false
		}
		above, err := strconv.ParseInt(argv[6], 10, 64)
		if err != nil {
			return nil, nil, false
		}
		out, errb := ts.cold(argv[4], argv[5], above, argv[7:])
		return out, errb, true
	}
	return nil, nil, false
}

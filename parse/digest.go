package parse

import (
	"bytes"
	"fmt"
)

// A log's history (what a first read starts back from, before the lines a
// pane shows) is mostly lines the views fold as "the last one wins": a
// worker log is tens of thousands of progress lines. The host agent sends
// that history digested (remote's taild op), so a cold status moves the
// lines that decide something, not a megabyte of them. DigestLog is the
// one rule, kept here so the agent and its tests share it.

// Digest names, as a Tail's Digest field and the taild op carry them.
const (
	DigestWorker = "worker" // a worker log: runs of progress lines thinned
	DigestServer = "server" // a server log: decode lines and access lines thinned
)

// digestKeep: the gaps between a rank's last decode lines (and the last
// access lines) a server digest keeps whole. A rank's usual gap between
// lines is a moving mean (a quarter a gap): after 32 true gaps what a
// dropped stretch added weighs 0.75^32, about 1e-4 of it.
const digestKeep = 32

// DigestLog returns the lines of data (whole lines, each ending in a
// newline) that a fold of the history needs, in order, each with its
// newline. For DigestWorker, a progress line between two progress lines
// goes: every fold of a progress line keeps the last one (a category's
// figures, the worker's wait ended), and a run's first line stays, so what
// follows a header, a traceback or a wait is folded as before; a line read
// while a traceback is open stays (FailureTally may take it for the
// exception that closes it). An unknown name keeps every line.
func DigestLog(name string, data []byte) []byte {
	switch name {
	case DigestServer:
		return digestServer(data)
	case DigestWorker:
	default:
		return data
	}
	var out []byte
	var prev []byte // the progress line held back: kept only if the next line is no progress line
	prevProg, heldProg := false, false
	var ft FailureTally // a line read while a traceback is open may close it: it stays
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a partial last line is no line of the history
		}
		line := data[:i+1]
		data = data[i+1:]
		pinned := ft.open > 0
		wl := ParseWorkerLine(string(line[:i]))
		ft.Fold(wl)
		prog := wl.Kind == WProgress && !pinned
		if heldProg && !prog {
			out = append(out, prev...) // the last of a run
		}
		heldProg = false
		switch {
		case prog && prevProg:
			prev, heldProg = line, true // the middle of a run, unless it ends it
		default:
			out = append(out, line...)
		}
		prevProg = prog
	}
	if heldProg {
		out = append(out, prev...)
	}
	return out
}

// digestServer keeps every line of a server log's history but three
// kinds, each only where no fold can tell: a batch line that made
// progress (a decode line that made tokens, a prefill line that took a
// prompt's in), of a rank and phase whose lines before and after it made
// progress too, with digestKeep gaps of that rank's lines after it (a
// hang, a progress after one, the first line after a start, and the last
// lines that time the rank's gap stay); and an access line followed at
// once by an access line of the same method, path and status, with more
// than digestKeep access lines after it (the newest request done, and a
// completion after each batch line kept, stay). The prefill lines that
// go are summed into one line where the last of them was (prefillSums):
// the cache hit rate is their sum. Startups, faults, retractions, vLLM's
// stats and every other line stay as they are.
func digestServer(data []byte) []byte {
	lines := wholeLines(data)
	ks := make([]srvKind, len(lines))
	for i, l := range lines {
		ks[i] = srvKindOf(l)
	}
	drop := make([]bool, len(lines))
	dropBatches(ks, drop)
	dropAccesses(ks, drop)
	var sum prefillSum
	last := -1 // the last prefill line dropped: its sum goes there
	for i, k := range ks {
		if drop[i] && k.r.prefill {
			sum.add(k)
			last = i
		}
	}
	var out []byte
	for i, l := range lines {
		if i == last {
			out = sum.line(out, l)
		}
		if !drop[i] {
			out = append(out, l...)
		}
	}
	return out
}

// prefillSum is what the prefill lines a digest dropped add to a fold:
// their #new-token and #cached-token, summed.
type prefillSum struct{ lines, newTok, cached int }

func (p *prefillSum) add(k srvKind) {
	p.lines++
	p.newTok += k.newTok
	p.cached += k.cached
}

// line appends the sum as a prefill line of l's own prefix (its time, its
// rank, any wrapper): "Prefill batch, #new-token: N, #cached-token: C,
// #lines-summed: L". It has no #running-req, so a fold adds its tokens to
// the cache hit rate's sums and takes it for no rank's newest line.
func (p *prefillSum) line(out, l []byte) []byte {
	i := bytes.Index(l, []byte("Prefill batch"))
	out = append(out, l[:i]...)
	return fmt.Appendf(out, "Prefill batch, #new-token: %d, #cached-token: %d, #lines-summed: %d\n", p.newTok, p.cached, p.lines)
}

// wholeLines splits data into its whole lines, each with its newline.
func wholeLines(data []byte) [][]byte {
	var lines [][]byte
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return lines
		}
		lines, data = append(lines, data[:i+1]), data[i+1:]
	}
}

// srvRank is a rank's periodic lines of one phase: DP ranks and PP
// stages log their own, and a rank's prefill and decode lines are folded
// apart.
type srvRank struct {
	dp, pp  int
	prefill bool
}

// srvKind is what digestServer needs of a line: a timed batch line (its
// rank, its time, whether it made progress; a prefill line's tokens) or
// an access line.
type srvKind struct {
	batch, prog    bool
	r              srvRank
	at             int64 // its own time, in seconds
	newTok, cached int
	access         bool
	acc            Access
}

func srvKindOf(l []byte) srvKind {
	if !bytes.Contains(l, []byte("Decode batch")) && !bytes.Contains(l, []byte("Prefill batch")) && !bytes.Contains(l, []byte("HTTP/")) {
		return srvKind{} // none of the kinds: no parse needed
	}
	ev := ParseServerLine(string(l[:len(l)-1]))
	switch {
	case ev.Kind == SBatch && ev.HasPrefix && !ev.Prefix.Time.IsZero():
		return batchKind(ev)
	case ev.Kind == SAccess:
		return srvKind{access: true, acc: ev.Access}
	}
	return srvKind{}
}

// batchKind: a decode line made progress when it made tokens; a prefill
// line when it took tokens in or gives a rate, as the pipeline's fold
// reads it. A prefill line is its rank's sample when it has #running-req
// (else it is kept, for its sums alone); it may go only with its sums
// whole (#cached-token there: an old line's lifetime hit rate stays).
func batchKind(ev ServerEvent) srvKind {
	b := ev.Batch
	k := srvKind{batch: true, r: srvRank{ev.Prefix.Ranks.DP, ev.Prefix.Ranks.PP, b.Phase == Prefill}, at: ev.Prefix.Time.Unix()}
	if b.Phase != Prefill {
		k.prog = b.GenThroughput.V > 0
		return k
	}
	if !b.RunningReqs.OK {
		return srvKind{}
	}
	k.prog = b.CachedTokens.OK && b.MixedRunning < 0 && (b.NewTokens.V > 0 || b.GenThroughput.V+b.InputThroughput.V > 0)
	k.newTok, k.cached = b.NewTokens.V, b.CachedTokens.V
	return k
}

// dropBatches marks the batch lines that made progress between two of
// their rank's that did, before the rank's last digestKeep gaps: gaps
// counted over its later lines' distinct times (a rank stamps several
// lines a second alike: a gap of 0 times nothing).
func dropBatches(ks []srvKind, drop []bool) {
	prevProg := map[srvRank]bool{} // the rank's batch line before made progress
	lastProg := make([]bool, len(ks))
	for i, k := range ks {
		if k.batch {
			lastProg[i], prevProg[k.r] = prevProg[k.r], k.prog
		}
	}
	gaps := map[srvRank]int{}
	later := map[srvRank]int64{}   // the time of the rank's next line
	nextProg := map[srvRank]bool{} // the rank's next batch line made progress
	for i := len(ks) - 1; i >= 0; i-- {
		k := ks[i]
		if !k.batch {
			continue
		}
		drop[i] = k.prog && lastProg[i] && nextProg[k.r] && gaps[k.r] >= digestKeep
		if t, ok := later[k.r]; ok && t != k.at {
			gaps[k.r]++
		}
		later[k.r], nextProg[k.r] = k.at, k.prog
	}
}

// sameAccess: b is an access line of a's method, path and status (the
// client's port differs line to line).
func sameAccess(a, b srvKind) bool {
	return a.access && b.access && a.acc.Method == b.acc.Method && a.acc.Path == b.acc.Path && a.acc.Status == b.acc.Status
}

// dropAccesses marks the access lines whose next line kept is one of the
// same method, path and status (no kept line between them to have been
// answered after it), before the last digestKeep access lines.
func dropAccesses(ks []srvKind, drop []bool) {
	after, next := 0, -1 // access lines after this one; the next line kept
	for i := len(ks) - 1; i >= 0; i-- {
		if k := ks[i]; k.access {
			drop[i] = next >= 0 && sameAccess(ks[next], k) && after >= digestKeep
			after++
		}
		if !drop[i] {
			next = i
		}
	}
}

package parse

import "bytes"

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

// digestServer keeps every line of a server log's history but two kinds,
// each only where no fold can tell: a decode line that made tokens, of a
// rank whose decode lines before and after it made tokens too, with
// digestKeep gaps of that rank's lines after it (a hang, a
// progress after one, the first line after a start, and the last lines
// that time the rank's gap stay); and an access line followed at once by
// an access line of the same method, path and status, with more than
// digestKeep access lines after it (the newest request done, and a
// completion after each batch line, stay). Startups, faults, retractions,
// prefill lines (their tallies are sums), vLLM's stats and every other
// line stay as they are.
func digestServer(data []byte) []byte {
	lines := wholeLines(data)
	ks := make([]srvKind, len(lines))
	for i, l := range lines {
		ks[i] = srvKindOf(l)
	}
	drop := make([]bool, len(lines))
	dropDecodes(ks, drop)
	dropAccesses(ks, drop)
	var out []byte
	for i, l := range lines {
		if !drop[i] {
			out = append(out, l...)
		}
	}
	return out
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

type srvRank struct{ dp, pp int }

// srvKind is what digestServer needs of a line: a timed decode line (its
// rank, its time, whether it made tokens) or an access line.
type srvKind struct {
	decode, prog bool
	r            srvRank
	at           int64 // its own time, in seconds
	access       bool
	acc          Access
}

func srvKindOf(l []byte) srvKind {
	if !bytes.Contains(l, []byte("Decode batch")) && !bytes.Contains(l, []byte("HTTP/")) {
		return srvKind{} // neither kind: no parse needed
	}
	ev := ParseServerLine(string(l[:len(l)-1]))
	switch {
	case ev.Kind == SBatch && ev.Batch.Phase == Decode && ev.HasPrefix && !ev.Prefix.Time.IsZero():
		return srvKind{decode: true, prog: ev.Batch.GenThroughput.V > 0, r: srvRank{ev.Prefix.Ranks.DP, ev.Prefix.Ranks.PP}, at: ev.Prefix.Time.Unix()}
	case ev.Kind == SAccess:
		return srvKind{access: true, acc: ev.Access}
	}
	return srvKind{}
}

// dropDecodes marks the decode lines that made tokens between two of
// their rank's that did, before the rank's last digestKeep gaps: gaps
// counted over its later lines' distinct times (a rank stamps several
// lines a second alike: a gap of 0 times nothing).
func dropDecodes(ks []srvKind, drop []bool) {
	prevProg := map[srvRank]bool{} // the rank's decode line before made tokens
	lastProg := make([]bool, len(ks))
	for i, k := range ks {
		if k.decode {
			lastProg[i], prevProg[k.r] = prevProg[k.r], k.prog
		}
	}
	gaps := map[srvRank]int{}
	later := map[srvRank]int64{}   // the time of the rank's next line
	nextProg := map[srvRank]bool{} // the rank's next decode line makes tokens
	for i := len(ks) - 1; i >= 0; i-- {
		k := ks[i]
		if !k.decode {
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

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
)

// DigestLog returns the lines of data (whole lines, each ending in a
// newline) that a fold of the history needs, in order, each with its
// newline. For DigestWorker, a progress line between two progress lines
// goes: every fold of a progress line keeps the last one (a category's
// figures, the worker's wait ended), and a run's first line stays, so what
// follows a header, a traceback or a wait is folded as before. An unknown
// name keeps every line.
func DigestLog(name string, data []byte) []byte {
	if name != DigestWorker {
		return data
	}
	var out []byte
	var prev []byte // the progress line held back: kept only if the next line is no progress line
	prevProg, heldProg := false, false
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // a partial last line is no line of the history
		}
		line := data[:i+1]
		data = data[i+1:]
		prog := isProgress(line[:i])
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

// isProgress: the cheap test first (a progress line starts with a digit
// and holds " req/s "), then the parse that decides.
func isProgress(line []byte) bool {
	if len(line) == 0 || line[0] < '0' || line[0] > '9' || !bytes.Contains(line, []byte(" req/s")) {
		return false
	}
	return ParseWorkerLine(string(line)).Kind == WProgress
}

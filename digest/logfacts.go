package digest

import (
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// logFacts are what the worker log says of the categories since each one's
// last header, read as the pipeline reads them (pipeline/worklog and
// pipeline/counts/categories.go): the failures it reported (parse.FailureTally), its last
// progress line, whether it was skipped, and whether the log ends with the
// last header (the worker just switched). They are the witnesses of ERR,
// when the category became current and its rate, which the report judges
// by the same parse functions as status.
type logFacts struct {
	tally      parse.FailureTally
	cats       map[string]*logCat
	headerOnly bool
	// current is the last header's category, prev the one before it
	// (a header repeated, a restart on the same category, keeps it)
	current, prev string
}

type logCat struct {
	failures int64
	progress parse.WorkerLine // the last progress line since its header
	skipped  bool
}

func (lf *logFacts) cat(name string) *logCat {
	if lf.cats == nil {
		lf.cats = map[string]*logCat{}
	}
	c := lf.cats[name]
	if c == nil {
		c = &logCat{}
		lf.cats[name] = c
	}
	return c
}

// fold reads the next line, w as parsed (a line the digest does not parse
// is WOther, or WError where parse.IsErrorLine says so); cur is the
// category of the log's last header before it.
func (lf *logFacts) fold(w parse.WorkerLine, cur string) {
	if lf.tally.Fold(w) && cur != "" {
		lf.cat(cur).failures++
	}
	switch w.Kind {
	case parse.WSeparator, parse.WPrompts, parse.WResume, parse.WRunning, parse.WSkip:
		// written with the header, at once: the log still "ends with" it
	case parse.WOther:
		if strings.TrimSpace(w.Text) != "" {
			lf.headerOnly = false
		}
	default:
		lf.headerOnly = false
	}
	switch w.Kind {
	case parse.WProcessing:
		if w.Category != lf.current {
			lf.prev, lf.current = lf.current, w.Category
		}
		c := lf.cat(w.Category)
		c.failures, c.progress = 0, parse.WorkerLine{} // the last run's figures are not this run's
		lf.headerOnly = true
	case parse.WSkip:
		lf.cat(w.Category).skipped = true
	case parse.WProgress:
		if cur != "" {
			lf.cat(cur).progress = w
		}
	}
}

// line is a worker log line as logFacts needs it, for a line the digest's
// other readers skip: parsed while the log may still end with a header
// (the few lines written with it) or a skip, else an error line or other
// text.
func (lf *logFacts) line(s string) parse.WorkerLine {
	if lf.headerOnly || strings.Contains(s, ": skipped (already done: ") {
		return parse.ParseWorkerLine(s)
	}
	if parse.IsErrorLine(s) {
		return parse.WorkerLine{Kind: parse.WError, Text: s}
	}
	return parse.WorkerLine{Kind: parse.WOther, Text: s}
}

package digest

import (
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// An answer is a uvicorn access line of a completion request the server
// answered 200. uvicorn logs it as the response starts
// (uvicorn/protocols/http/httptools_impl.py and h11_impl.py,
// RequestResponseCycle.send on "http.response.start"): for a request that
// is not streamed, as the old script's were, that is when its answer is
// ready, the moment its record is written; for a streamed one, when its
// first bytes go out. The line carries no request id, so it cannot place a
// record, only count an hour's answers.
func isAnswer(a parse.Access) bool {
	if a.Status != 200 || a.Method != "POST" {
		return false
	}
	p, _, _ := strings.Cut(a.Path, "?")
	switch p {
	case "/v1/chat/completions", "/v1/completions", "/generate":
		return true
	}
	return false
}

// untimed gives each interval its estimate of the records with no time of
// their own: the server's answers less the records placed there by their
// own times. It is made only when the root has such records and the
// estimates, summed, fit in them; more answers than that mean answers to
// someone else (another client, retries), and no figure is given.
func (d *digester) untimed() {
	var noTime, est int64
	for _, c := range d.s.Categories {
		noTime += c.NoTime
	}
	if noTime == 0 {
		return
	}
	guess := make([]int64, len(d.s.Intervals))
	for i, iv := range d.s.Intervals {
		if iv.Answers == 0 {
			continue
		}
		var placed int64
		for _, k := range iv.Categories {
			placed += k.Records
		}
		guess[i] = max(iv.Answers-placed, 0)
		est += guess[i]
	}
	if est == 0 {
		return
	}
	if est > noTime {
		d.s.Notes = appendNote(d.s.Notes, "the server log's answers exceed the records with no time (another client, or retries): no hour's figure is given for them")
		return
	}
	for i := range d.s.Intervals {
		d.s.Intervals[i].Untimed = guess[i]
	}
	d.s.UntimedPlaced = est
}

package digest

import (
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// recordSpan is what the last records of a category's raw_responses.jsonl
// say of its pace (parse.TailRecordSpan over its last
// parse.RecordTailMax bytes, as the host agent reads them for status and
// the dashboard): the third witness of a running category's rate.
func recordSpan(p string, loc *time.Location, now time.Time) parse.RecordSpan {
	f, err := parse.OpenRegular(p) // a FIFO in its place is refused, not waited on
	if err != nil {
		return parse.RecordSpan{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return parse.RecordSpan{}
	}
	data, cut, err := parse.ReadRecordTail(f, fi.Size())
	if err != nil {
		return parse.RecordSpan{}
	}
	return parse.TailRecordSpan(data, cut, loc, now)
}

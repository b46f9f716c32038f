package digest

import (
	"io"
	"os"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// recordSpan is what the last records of a category's raw_responses.jsonl
// say of its pace (parse.TailRecordSpan over its last
// parse.RecordTailMax bytes, as the host agent reads them for status and
// the dashboard): the third witness of a running category's rate.
func recordSpan(p string, loc *time.Location, now time.Time) parse.RecordSpan {
	f, err := os.Open(p)
	if err != nil {
		return parse.RecordSpan{}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return parse.RecordSpan{}
	}
	off := max(fi.Size()-parse.RecordTailMax, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return parse.RecordSpan{}
	}
	return parse.TailRecordSpan(data, off > 0, loc, now)
}

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
	var data []byte
	off := int64(0)
	for n := int64(parse.RecordTailMax); ; n *= parse.RecordTailGrow {
		off = max(fi.Size()-n, 0)
		if data, err = io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off)); err != nil || off == 0 ||
			n > parse.RecordTailMax || !parse.RecordTailShort(data) {
			break
		}
	}
	if err != nil {
		return parse.RecordSpan{}
	}
	return parse.TailRecordSpan(data, off > 0, loc, now)
}

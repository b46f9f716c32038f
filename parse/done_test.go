package parse

import (
	"strings"
	"testing"
)

// JudgeDone's rows, each from the evidence a view has: worker.json's scan,
// the records a reader examined, the bare line count.
func TestJudgeDoneRows(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	js := func(lines, extra int64) *CategoryState {
		return &CategoryState{Name: "B1", Lines: n(lines), ExtraLines: n(extra)}
	}
	for _, tc := range []struct {
		name string
		f    DoneFacts
		done int64
		note string
	}{
		{"the bare line count", DoneFacts{Lines: 52}, 52, ""},
		{"every line examined, 2 bad", DoneFacts{Lines: 52, Records: 50, RecordsKnown: true}, 50, "52 lines, 50 records (2 blank or bad)"},
		{"a torn tail parsed is not a line", DoneFacts{Lines: 52, Records: 53, RecordsKnown: true}, 52, ""},
		{"worker.json's 2 duplicates beat the records", DoneFacts{Lines: 52, Records: 52, RecordsKnown: true, Worker: js(40, 2)}, 50,
			"52 lines, 50 unique records (2 duplicate or unreadable)"},
		{"measured, no extra", DoneFacts{Lines: 52, Worker: js(40, 0)}, 52, ""},
		{"worker.json with no scan yet", DoneFacts{Lines: 52, Records: 51, RecordsKnown: true, Worker: &CategoryState{Name: "B1"}}, 51,
			"52 lines, 51 records (1 blank or bad)"},
		{"rewritten since the scan", DoneFacts{Lines: 52, Records: 52, RecordsKnown: true, Worker: js(40, 2), ScanVoid: true}, 52,
			"the file was rewritten since the worker's resume scan: DONE is its records, duplicates unchecked"},
		{"shorter than at the scan", DoneFacts{Lines: 30, Worker: js(40, 2)}, 30,
			"the file was rewritten since the worker's resume scan: DONE is its line count, duplicates unchecked"},
		{"more extra than lines", DoneFacts{Lines: 3, Worker: js(3, 5)}, 0, "3 lines, 0 unique records (5 duplicate or unreadable)"},
		{"a negative extra is no scan (DONE was never past the lines)", DoneFacts{Lines: 30, Records: 30, RecordsKnown: true, Worker: js(30, -1000)}, 30, ""},
	} {
		done, note := JudgeDone(tc.f)
		if done != tc.done || note != tc.note {
			t.Errorf("%s: %d %q; want %d %q", tc.name, done, note, tc.done, tc.note)
		}
		if strings.Contains(note, "\n") {
			t.Errorf("%s: a note is one line: %q", tc.name, note)
		}
	}
}

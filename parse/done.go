package parse

import "fmt"

// DoneFacts are the witnesses of how many of a category's lines are its
// records: the file's whole lines, the records a reader found when it
// examined every line, worker.json's figures from its resume scan, and
// whether the file was rewritten since that scan.
type DoneFacts struct {
	Lines        int64 // whole lines of raw_responses.jsonl (blank and bad ones too)
	Records      int64 // the lines that are records, when RecordsKnown
	RecordsKnown bool  // every whole line was examined
	// Worker is worker.json's entry for the category (nil: none); its
	// Lines and ExtraLines are measured at its resume scan
	Worker *CategoryState
	// ScanVoid: the file was rewritten (cut or replaced) since that scan,
	// so its extra lines no longer describe it
	ScanVoid bool
}

// JudgeDone is a category's DONE and the note that explains it when DONE
// is not its line count, as every view says it. The rows, first match:
//
//	| evidence                                                         | DONE                | note                                     |
//	| worker.json measured extra lines, file not rewritten since, not   | lines − extra lines | "N lines, M unique records (K duplicate  |
//	|   shorter than at the scan                                        |                     |   or unreadable)" when extra > 0         |
//	| every line examined                                               | records             | "N lines, M records (K blank or bad)"    |
//	|                                                                   |                     |   when they differ                       |
//	| otherwise                                                         | lines               | —                                        |
//
// A file rewritten since worker.json's scan adds the note that duplicates
// are unchecked. The worker appends only unique records after its scan,
// so lines − extra stays its unique records; without it, a reader that
// examined every line knows the records but not their duplicates.
func JudgeDone(f DoneFacts) (done int64, note string) {
	js := f.Worker
	// a negative count is no scan's (a hand-edited worker.json): it would
	// put DONE past the file's lines
	measured := js != nil && js.ExtraLines != nil && *js.ExtraLines >= 0
	switch {
	case measured && !f.ScanVoid && (js.Lines == nil || f.Lines >= *js.Lines):
		extra := *js.ExtraLines
		done = max(f.Lines-extra, 0)
		if extra > 0 {
			note = fmt.Sprintf("%s lines, %s unique records (%s duplicate or unreadable)", Thousands(f.Lines), Thousands(done), Thousands(extra))
		}
		return done, note
	case f.RecordsKnown:
		done = min(f.Records, f.Lines)
		if done < f.Lines {
			note = fmt.Sprintf("%s lines, %s records (%s blank or bad)", Thousands(f.Lines), Thousands(done), Thousands(f.Lines-done))
		}
	default:
		done = f.Lines
	}
	if measured && *js.ExtraLines > 0 && (f.ScanVoid || js.Lines != nil && f.Lines < *js.Lines) {
		note = joinNote(note, "the file was rewritten since the worker's resume scan: DONE is its "+doneWhat(f)+", duplicates unchecked")
	}
	return done, note
}

func doneWhat(f DoneFacts) string {
	if f.RecordsKnown {
		return "records"
	}
	return "line count"
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

package worker

import (
	"errors"
	"fmt"
	"os"

	"github.com/synthwatch/synthwatch/parse"
)

// lineFigures are worker.json's lines and extra_lines for a category at its
// resume scan: every physical line of raw_responses.jsonl, and those that
// are not a unique record for a prompt (blank, bad, duplicate ids, ids no
// prompt has). done is Scan.match's.
func lineFigures(scan Scan, done int) (lines, extra int64) {
	return int64(scan.Lines), int64(scan.Lines - done)
}

// failedPrompts reads errors.jsonl: the keys of prompts that failed and
// have no record in raw_responses.jsonl (scan) since, so their latest
// attempt failed. A missing file holds none; an unreadable line is skipped
// (a torn tail is repaired before the run appends).
func failedPrompts(path string, prompts promptSet, scan Scan) (map[string]struct{}, error) {
	failed := map[string]struct{}{}
	f, err := openOutput(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return failed, nil
	}
	if err != nil {
		return failed, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	err = eachLine(f, func(line []byte) {
		h, err := parse.ParseRecordHead(line)
		if err != nil {
			return
		}
		if _, ok := prompts.keys[h.Key]; !ok {
			return
		}
		if _, done := scan.Tokens[h.Key]; !done {
			failed[h.Key] = struct{}{}
		}
	})
	if err != nil {
		return failed, fmt.Errorf("read %s: %w", path, err)
	}
	return failed, nil
}

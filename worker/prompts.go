package worker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/synthwatch/synthwatch/parse"
)

// promptLine is one readable line of prompts.jsonl.
type promptLine struct {
	key    string          // the id's canonical key (parse.RecordHead.Key)
	id     json.RawMessage // the id, compacted: what the record carries
	prompt Prompt
}

// parsePromptLine reads one line of prompts.jsonl (without its '\n'; a BOM
// and surrounding whitespace are accepted). The line must be one JSON object
// with a non-null "id" (the exact key; the last of duplicates wins, as
// Python's json.loads). Any id value works, objects and arrays included.
func parsePromptLine(line []byte) (promptLine, error) {
	m, err := parse.Members(line)
	if err != nil {
		return promptLine{}, err
	}
	raw, ok := m["id"]
	if !ok || string(raw) == "null" {
		return promptLine{}, parse.ErrNoID
	}
	key, err := parse.CanonicalKey(raw)
	if err != nil {
		return promptLine{}, err
	}
	var id bytes.Buffer
	if err := json.Compact(&id, raw); err != nil {
		return promptLine{}, err
	}
	field := func(name string) json.RawMessage {
		v := m[name]
		if string(v) == "null" {
			return nil
		}
		return v
	}
	p := Prompt{ID: id.Bytes(), Messages: field("messages"), Text: field("text"), InputIDs: field("input_ids")}
	return promptLine{key: key, id: p.ID, prompt: p}, nil
}

// promptSet is what prompts.jsonl holds, by canonical id key.
type promptSet struct {
	keys         map[string]struct{}
	lines        int // lines that are not blank
	bad          int // lines that cannot be read (not JSON, no id): skipped
	dups         int // lines whose id an earlier line has: skipped
	badExamples  []string
	messagesOnly int // prompts with messages but no text/input_ids
	noMessages   int // prompts chat cannot send
}

// readPromptSet reads every prompt's id; blank lines are skipped.
func readPromptSet(path string) (promptSet, error) {
	ps := promptSet{keys: map[string]struct{}{}}
	f, err := openInput(path)
	if err != nil {
		return ps, fmt.Errorf("prompts: %w", err)
	}
	defer f.Close()
	n := 0
	err = eachLine(f, func(line []byte) {
		n++
		if len(bytes.TrimSpace(line)) == 0 {
			return
		}
		ps.lines++
		pl, err := parsePromptLine(line)
		if err != nil {
			ps.bad++
			if len(ps.badExamples) < maxExamples {
				ps.badExamples = append(ps.badExamples, badExample(n, err))
			}
			return
		}
		if _, dup := ps.keys[pl.key]; dup {
			ps.dups++
			return
		}
		ps.keys[pl.key] = struct{}{}
		switch {
		case len(pl.prompt.Messages) == 0:
			ps.noMessages++
		case len(pl.prompt.Text) == 0 && len(pl.prompt.InputIDs) == 0:
			ps.messagesOnly++
		}
	})
	if err != nil {
		return ps, fmt.Errorf("prompts %s: %w", path, err)
	}
	return ps, nil
}

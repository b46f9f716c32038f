package main

import (
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest/digesttest"
)

// eraRoot writes digesttest.EraNight's root (the old script's records over
// an FP8 era and an auto era of the server log); the want is each
// category's records by config in status's words, from Python's counts.
func eraRoot(t *testing.T) (string, map[string]string) {
	root := t.TempDir()
	want := digesttest.EraWant(digesttest.EraNight(t, root))
	ageRoot(t, root, map[string]time.Duration{"logs/sglang_inference.log": 30 * time.Minute,
		"prepared/B2_opencodeinstruct/raw_responses.jsonl": 40 * time.Minute, "prepared/B3_python/raw_responses.jsonl": 4 * time.Hour})
	return root, want
}

// configsOf is what status's tokens line of a category ("  NAME: …
// tokens; records by config: …; ended: …") says of its configurations.
func configsOf(line string) string {
	_, rest, ok := strings.Cut(line, "; records by config: ")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "; ended: ")
	return strings.TrimSpace(rest)
}

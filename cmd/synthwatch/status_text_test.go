package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline"
)

// Names and warnings come from the host: text status prints no escape
// sequence and no tab of theirs.
func TestTextStatusIsSanitised(t *testing.T) {
	var b bytes.Buffer
	printStatus(&b, pipeline.Snapshot{Host: "h", Root: "/r\x1b]0;TITLE\a",
		Categories: []pipeline.Category{{Name: "B\x1b]0;TITLE-HIJACK\a\x1b[2J\tx", Class: "SHORT"}},
		Warnings:   []string{"runs.jsonl model \x1b[5mblink\x1b[0m"}})
	out := b.String()
	if strings.ContainsRune(out, 0x1b) || strings.Contains(out, "\a") || strings.Contains(out, "B\t") {
		t.Fatalf("raw control bytes in:\n%q", out)
	}
	if !strings.Contains(out, "B x") || !strings.Contains(out, "blink") {
		t.Fatalf("the text itself is lost:\n%q", out)
	}
}

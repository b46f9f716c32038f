package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every test docs/THREATS.md names for a row exists in the module: a row
// whose test was renamed or deleted would claim a defence nothing checks.
func TestThreatModelTestsExist(t *testing.T) {
	doc, err := os.ReadFile("../../docs/THREATS.md")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1)
	if len(named) < 10 {
		t.Fatalf("docs/THREATS.md names %d tests", len(named))
	}
	var src strings.Builder
	filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, "_test.go") {
			b, _ := os.ReadFile(p)
			src.Write(b)
		}
		return nil
	})
	for _, m := range named {
		if !strings.Contains(src.String(), "func "+m[1]+"(") {
			t.Errorf("docs/THREATS.md names %s, which no test file defines", m[1])
		}
	}
}

package pipeline

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The README's table of category states is the code's: every state
// categoryView gives, in order, and no other.
func TestReadmeListsEveryCategoryState(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const open, end = "<!-- category states: from pipeline.CategoryStates, checked by TestReadmeListsEveryCategoryState -->\n", "<!-- /category states -->"
	_, rest, ok := strings.Cut(string(data), open)
	table, _, ok2 := strings.Cut(rest, end)
	if !ok || !ok2 {
		t.Fatalf("README.md has no category state table between %q and %q", open, end)
	}
	var got []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)` \\|").FindAllStringSubmatch(table, -1) {
		got = append(got, m[1])
	}
	if !slices.Equal(got, CategoryStates) {
		t.Fatalf("README's category states %q, the code's %q", got, CategoryStates)
	}
}

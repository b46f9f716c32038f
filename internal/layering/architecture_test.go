package layering

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// row is one line of ARCHITECTURE.md's package table.
type row struct {
	name   string
	allows []string // nil: the row allows everything, or says "—"
	any    bool
}

var rowRE = regexp.MustCompile("^\\| `([a-z/]+)` \\| .* \\| ([^|]+) \\|$")

func architectureRows(t *testing.T) []row {
	t.Helper()
	b, err := os.ReadFile("../../ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, l := range strings.Split(string(b), "\n") {
		m := rowRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		r := row{name: m[1]}
		col := strings.TrimSpace(m[2])
		switch {
		case strings.HasPrefix(col, "everything"), col == "—":
			r.any = true
		case strings.HasPrefix(col, "nothing"):
		default:
			for _, f := range strings.Split(col, ",") {
				f = strings.TrimSpace(f)
				if i := strings.IndexByte(f, ' '); i > 0 {
					f = f[:i] // "pipeline (never remote, …)"
				}
				r.allows = append(r.allows, f)
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatal("ARCHITECTURE.md has no package table")
	}
	return rows
}

// TestArchitectureIsTheMap keeps ARCHITECTURE.md true: every package it names
// exists, every package of the module is named, and each package imports no
// project package beyond what its row allows.
func TestArchitectureIsTheMap(t *testing.T) {
	ps := packages(t)
	rows := architectureRows(t)
	named := map[string]bool{}
	for _, r := range rows {
		named[r.name] = true
		p, ok := ps[r.name]
		if !ok {
			t.Errorf("ARCHITECTURE.md names package %s, which does not exist", r.name)
			continue
		}
		if r.any {
			continue
		}
		for _, imp := range project(p.Imports) {
			if !slices.Contains(r.allows, imp) {
				t.Errorf("%s imports %s; ARCHITECTURE.md allows %v", r.name, imp, r.allows)
			}
		}
	}
	for name := range ps {
		if name != "" && !named[name] {
			t.Errorf("package %s is not in ARCHITECTURE.md's table", name)
		}
	}
}

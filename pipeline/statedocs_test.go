package pipeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/statedocs"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// The docs' state tables are the code's (worker and category in
// docs/STATUS.md, server in docs/SERVER-STATES.md): each lists, in order,
// exactly the states of its list (WorkerStates, ServerStates, CategoryStates), and
// each list holds every constant of its named type (StateSkipped aside: no
// Snapshot carries it, see snapshot/states.go).
func TestDocStateTables(t *testing.T) {
	t.Parallel()
	consts := stateConsts(t)
	for _, tc := range []struct {
		name, typ, doc string
		list           []string
	}{
		{"worker", "WorkerState", "docs/STATUS.md", strs(snapshot.WorkerStates)},
		{"server", "ServerState", "docs/SERVER-STATES.md", strs(snapshot.ServerStates)},
		{"category", "CategoryState", "docs/STATUS.md", strs(snapshot.CategoryStates)},
	} {
		data, err := os.ReadFile(filepath.Join("..", tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := statedocs.States(string(data), tc.name, tc.typ)
		if !ok {
			t.Errorf("%s has no %s state table", tc.doc, tc.name)
			continue
		}
		if !slices.Equal(got, tc.list) {
			t.Errorf("%s's %s states %q, the code's %q", tc.doc, tc.name, got, tc.list)
		}
		named := slices.DeleteFunc(consts[tc.typ], func(v string) bool { return tc.typ == "CategoryState" && v == string(snapshot.StateSkipped) })
		slices.Sort(named)
		if listed := slices.Sorted(slices.Values(tc.list)); !slices.Equal(named, listed) {
			t.Errorf("the %s constants %q, its list %q", tc.typ, named, listed)
		}
	}
}

func strs[S ~string](l []S) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = string(s)
	}
	return out
}

// stateConsts are the values of package snapshot's constants by their named
// type, read from its source: a state added without its list is caught.
func stateConsts(t *testing.T) map[string][]string {
	names, err := filepath.Glob("snapshot/*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			d, ok := n.(*ast.GenDecl)
			if !ok || d.Tok != token.CONST {
				return true
			}
			for _, sp := range d.Specs {
				vs := sp.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || !strings.HasSuffix(id.Name, "State") {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						out[id.Name] = append(out[id.Name], s)
					}
				}
			}
			return false
		})
	}
	return out
}

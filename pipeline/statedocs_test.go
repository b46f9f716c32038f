package pipeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
		got, ok := docStates(string(data), tc.name, tc.typ)
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

// docStates are the states of a doc's state table, in its order.
func docStates(doc, name, typ string) ([]string, bool) {
	open, end := "<!-- "+name+" states: from snapshot."+typ+"s, checked by TestDocStateTables -->\n", "<!-- /"+name+" states -->"
	_, rest, ok := strings.Cut(doc, open)
	table, _, ok2 := strings.Cut(rest, end)
	var got []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(table, -1) {
		got = append(got, m[1])
	}
	return got, ok && ok2
}

// The server's state table (probeRows, logRows) and docs/SERVER-STATES.md's
// cannot drift: over a grid of witnesses every row is the first to hold
// for some of them (none is dead), and the states the rows give are
// exactly the doc's.
func TestServerRowsGiveTheDocStates(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docs/SERVER-STATES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := docStates(string(data), "server", "ServerState")
	first := func(rows []serverRow, f serverFacts) int {
		return slices.IndexFunc(rows, func(r serverRow) bool { return r.when(f) })
	}
	probeHit, logHit := map[int]bool{}, map[int]bool{}
	given := map[string]bool{}
	for f := range serverFactsGrid() {
		i := first(probeRows, f)
		probeHit[i] = true
		if probeRows[i].state == "" {
			j := first(logRows, f)
			logHit[j] = true
		}
		state, _ := serverStateFor(f)
		given[string(state)] = true
	}
	for _, tab := range []struct {
		name string
		rows []serverRow
		hit  map[int]bool
	}{{"probeRows", probeRows, probeHit}, {"logRows", logRows, logHit}} {
		for i, r := range tab.rows {
			if !tab.hit[i] {
				t.Errorf("%s[%d] (%s) is never the first row to hold", tab.name, i, r.state)
			}
		}
	}
	if got := slices.Sorted(maps.Keys(given)); !slices.Equal(got, slices.Sorted(slices.Values(doc))) {
		t.Errorf("the rows give %q, docs/SERVER-STATES.md lists %q", got, doc)
	}
}

// serverFactsGrid: every probe answer and log phase, with and without a
// fault, a hang, load, a log that grew and a waiting worker.
func serverFactsGrid() iter.Seq[serverFacts] {
	return func(yield func(serverFacts) bool) {
		for _, m := range []string{"", "ok", "refused", "timeout", "no_metrics", "http 500"} {
			for _, h := range []string{"", "ok", "refused", "timeout", "http 503"} {
				for _, phase := range []string{"", "startup", "ready", "crash", "stop"} {
					for bits := range 1 << 6 {
						for _, age := range []time.Duration{0, 5 * time.Second, 2 * time.Minute} {
							f := serverFacts{metrics: m, health: h, phase: phase, stop: "SIGTERM received",
								logSeen: bits&1 != 0, logGrew: bits&2 != 0, waiting: bits&4 != 0, logAge: age}
							if bits&8 != 0 {
								f.fault = "Health check failed"
							}
							if bits&16 != 0 {
								f.hang = "watchdog"
							}
							if bits&32 != 0 {
								f.load = 2
							}
							if !yield(f) {
								return
							}
						}
					}
				}
			}
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

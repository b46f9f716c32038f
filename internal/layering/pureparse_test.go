package layering

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// parseIO is where parse may touch files: the reads that judge a file
// before they trust it (its kind, its owner and mode), which the worker,
// the agent and the dashboard share. Nothing else in parse does I/O.
var parseIO = []string{"regular.go", "trust.go"}

// ioImports are the packages that do I/O on files, processes or the net.
var ioImports = []string{"os", "os/exec", "os/user", "net", "net/http", "syscall", "io/ioutil", "os/signal"}

// TestParseDoesNoIO holds ARCHITECTURE.md's rule: parse's files import no
// I/O package, but those of parseIO.
func TestParseDoesNoIO(t *testing.T) {
	p := packages(t)["parse"]
	if len(p.GoFiles) == 0 {
		t.Fatal("go list gave parse no files")
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(parseIO, name) {
			continue
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if slices.Contains(ioImports, path) {
				t.Errorf("parse/%s imports %s: parse does no I/O (its file reads live in %v)", name, path, parseIO)
			}
		}
	}
}

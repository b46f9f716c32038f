package tui

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tui reads Snapshots and asks for actions; it never talks SSH and never
// runs the simulator (ARCHITECTURE.md, "Packages"). Its tests keep the rule too.
func TestTuiImportsNeitherRemoteNorSim(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatal(files, err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, banned := range []string{"github.com/synthwatch/synthwatch/remote", "github.com/synthwatch/synthwatch/sim"} {
				if path == banned || strings.HasPrefix(path, banned+"/") {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}

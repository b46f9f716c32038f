package layering

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/synthwatch/synthwatch"

type pkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string // direct, non-test
	Deps         []string // transitive, non-test
	TestImports  []string
	XTestImports []string
}

// packages lists the module's packages with go list.
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps=false", "-json", mod+"/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	ps := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		ps[strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, mod), "/")] = p
	}
	for _, must := range []string{"cmd/synthwatch", "digest", "parse", "pipeline", "remote", "report", "sim", "tui", "worker"} {
		if _, ok := ps[must]; !ok {
			t.Fatalf("go list found no package %s (found %d)", must, len(ps))
		}
	}
	return ps
}

// project keeps the module's own packages of paths, without the module prefix.
func project(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == mod || strings.HasPrefix(p, mod+"/") {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, mod), "/"))
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	ps := packages(t)
	direct := func(name string) []string { // the package and its tests
		p := ps[name]
		return project(slices.Concat(p.Imports, p.TestImports, p.XTestImports))
	}

	t.Run("tui never imports sim", func(t *testing.T) {
		if slices.Contains(direct("tui"), "sim") {
			t.Errorf("tui (or its tests) imports sim; it reads Snapshots only")
		}
	})
	t.Run("tui never imports pipeline", func(t *testing.T) {
		// it reads Snapshots and the Timeline, and acts through its Backend
		if slices.Contains(direct("tui"), "pipeline") || slices.Contains(project(ps["tui"].Deps), "pipeline") {
			t.Errorf("tui (or its tests) imports pipeline; it reads pipeline/snapshot and pipeline/timeline only")
		}
	})
	t.Run("pipeline/timeline imports only parse and pipeline/snapshot", func(t *testing.T) {
		// every part writes to it: it may depend on no part
		if got := project(ps["pipeline/timeline"].Deps); !slices.Equal(got, []string{"parse", "pipeline/snapshot"}) {
			t.Errorf("pipeline/timeline depends on %v; it may import parse and pipeline/snapshot only", got)
		}
	})
	t.Run("tui never imports remote", func(t *testing.T) {
		if slices.Contains(direct("tui"), "remote") {
			t.Errorf("tui (or its tests) imports remote; the link reaches it as snapshot.Connection")
		}
	})
	t.Run("parse imports no project package", func(t *testing.T) {
		if got := project(ps["parse"].Deps); len(got) > 0 {
			t.Errorf("parse depends on %v; it must stay pure (stdlib, expfmt, toml)", got)
		}
		if got := slices.DeleteFunc(direct("parse"), func(s string) bool { return s == "parse" }); len(got) > 0 {
			t.Errorf("parse's tests import %v", got)
		}
	})
	t.Run("worker imports only parse", func(t *testing.T) {
		if got := project(ps["worker"].Deps); !slices.Equal(got, []string{"parse"}) && len(got) > 0 {
			t.Errorf("worker depends on %v; of the project's packages it may import parse only", got)
		}
	})
	t.Run("digest imports only parse", func(t *testing.T) {
		// it runs on the host inside the worker's binary: no SSH, no UI
		if got := project(ps["digest"].Deps); !slices.Equal(got, []string{"parse"}) {
			t.Errorf("digest depends on %v; of the project's packages it may import parse only", got)
		}
	})
	t.Run("pipeline/snapshot imports only parse", func(t *testing.T) {
		// the schema every view reads: no part of the pipeline, no link
		if got := project(ps["pipeline/snapshot"].Deps); !slices.Equal(got, []string{"parse"}) {
			t.Errorf("pipeline/snapshot depends on %v; of the project's packages it may import parse only", got)
		}
	})
	t.Run("report imports only digest and parse", func(t *testing.T) {
		if got := project(ps["report"].Deps); !slices.Equal(got, []string{"digest", "parse"}) {
			t.Errorf("report depends on %v; it renders a digest.Summary and may import digest and parse only", got)
		}
	})
	t.Run("product packages never import sim", func(t *testing.T) {
		for name, p := range ps {
			if name == "sim" || name == "cmd/synthwatch" || testHelper(name) {
				continue
			}
			if slices.Contains(project(p.Deps), "sim") {
				t.Errorf("%s depends on sim; only cmd (demo and sim subcommands) may", name)
			}
		}
	})
	t.Run("cmd imports sim only for demo and sim", func(t *testing.T) {
		p := ps["cmd/synthwatch"]
		for _, f := range p.GoFiles {
			if f == "demo.go" || f == "sim.go" {
				continue
			}
			if slices.Contains(fileImports(t, filepath.Join(p.Dir, f)), mod+"/sim") {
				t.Errorf("cmd/synthwatch/%s imports sim; only demo.go and sim.go may", f)
			}
		}
	})
}

// testHelper packages exist for tests (ARCHITECTURE.md); they may run sim.
func testHelper(name string) bool {
	return strings.HasPrefix(name, "internal/") || strings.HasSuffix(name, "test") || name == "remote/faultproxy"
}

func fileImports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		out = append(out, p)
	}
	return out
}

package remote

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// More ops than spawnmax, slow ones in a few slots, keys asked twice in
// one request, an each over no folder, answers that change size only or
// content only between requests: every request answers as the one-shot
// does, under dash, busybox and bash as sh, and the Go agent.
func TestShellAgentSlotsAndKeptAnswers(t *testing.T) {
	testgate.E2E(t)
	run := func(t *testing.T, ag *Agent) {
		dir := t.TempDir()
		empty := filepath.Join(dir, "empty")
		prep := filepath.Join(dir, "prep")
		must(t, os.MkdirAll(empty, 0o755))
		for _, n := range hostileNames[:6] {
			must(t, os.MkdirAll(filepath.Join(prep, n), 0o755))
			writeFile(t, filepath.Join(prep, n, "raw.jsonl"), "{\"id\":1}\n")
		}
		files := make([]string, 20) // 2 ops each and more: past spawnmax
		for i := range files {
			files[i] = filepath.Join(dir, fmt.Sprintf("f %d", i))
			writeFile(t, files[i], strings.Repeat("x", i))
		}
		batch := func() *Batch {
			b := &Batch{}
			for i, f := range files {
				if i%7 == 3 { // a slow op in its slot while the others end
					b.Exec("sh", "-c", `sleep 0.3; cat -- "$1"`, "slow", f)
				}
				b.Cat(f, 100)
				b.Count(NewCounter(f))
				if i%5 == 0 { // the same key again in one request
					b.Cat(f, 100)
					b.Exec("sh", "-c", `cat -- "$1"`, "again", files[0])
				}
			}
			b.Each(empty, []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
			b.Each(prep, []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
			return b
		}
		for round := 0; round < 5; round++ {
			sameAsOneShotOn(t, ag, batch, round)
			switch round {
			case 0: // content only, the same size
				for i, f := range files {
					writeFile(t, f, strings.Repeat("y", i))
				}
			case 1: // one grows, one shrinks, the rest as they were
				appendFile(t, files[3], "z\n")
				writeFile(t, files[10], "")
			case 2: // an each gains a folder; the other loses one
				must(t, os.MkdirAll(filepath.Join(empty, "c"), 0o755))
				writeFile(t, filepath.Join(empty, "c", "raw.jsonl"), "{}\n")
				must(t, os.RemoveAll(filepath.Join(prep, hostileNames[2])))
			case 3: // back to what round 1 answered: a kept answer must not stand for it wrongly
				writeFile(t, files[0], "")
				writeFile(t, files[3], strings.Repeat("y", 3))
			}
		}
	}
	everyAgent(t, nil, run)
}

// everyAgent runs run with a local shell agent under the machine's sh and
// awk, busybox's, bash as sh, each PATH of paths (replacing the test's),
// and the Go agent. Every awk is TestAgentFirstRequestHostileNames's: here
// the machine's and busybox's.
func everyAgent(t *testing.T, paths map[string]string, run func(t *testing.T, ag *Agent)) {
	path := os.Getenv("PATH")
	shell := func(name, p string) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("PATH", p)
			ag := NewAgent(Local{})
			t.Cleanup(ag.Close)
			run(t, ag)
		})
	}
	for name, d := range awkAndBusybox(t) {
		shell(name, d+string(os.PathListSeparator)+path)
	}
	for name, p := range paths {
		shell(name, p)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		d := t.TempDir()
		writeFile(t, filepath.Join(d, "sh"), "#!/bin/sh\nexec "+bash+" \"$@\"\n")
		must(t, os.Chmod(filepath.Join(d, "sh"), 0o755))
		shell("bash", d+string(os.PathListSeparator)+path)
	}
	t.Run("go", func(t *testing.T) { run(t, goAgent(t)) })
}

// The one-shot batch owns its variables: a host's login exporting so
// (where a spawn's records go) or ap (the path an agent's op names by
// alias) changes none of its answers.
func TestBatchOnceIgnoresTheHostsVariables(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "raw.jsonl")
	writeFile(t, f, "{\"id\":1}\n{\"id\":2}\n")
	batch := func() *Batch {
		b := &Batch{}
		b.Cat(f, 100)
		b.Count(NewCounter(f))
		b.Exec("echo", "hi")
		return b
	}
	run := func() string {
		b := batch()
		res, err := Local{}.Exec(context.Background(), b.Argv()...)
		must(t, err)
		a, err := parseBatchOf(res.Stdout, b, nil)
		if err != nil {
			t.Fatalf("%v:\n%s", err, res.Stdout)
		}
		return answersText(a)
	}
	want := run()
	t.Setenv("so", "taken")
	t.Setenv("ap", f)
	t.Setenv("an", "elsewhere")
	if got := run(); got != want {
		t.Fatalf("with so and ap in the environment:\n%s\nwant\n%s", got, want)
	}
}

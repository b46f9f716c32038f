package remote

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The agent's share of the training-readiness gate (parse.GateTally): per
// file, beside the token sums, the records' gate counts. Every rule but
// max_length is judged on the laptop from those counts; max_length is the
// root's pipeline.toml's [gate] max_length, which the agent reads itself
// (the file is <root>/prepared/NAME/raw_responses.jsonl), so the token
// sums' request is the awk's. The T line says which max_length its counts
// were judged against, and kept sums judged against another are summed
// again from 0.

// addGate counts one record for the gate.
func (s *rangeSum) addGate(f parse.RecordFacts) {
	n, ok := parse.Length(f.CompletionTokens, f.HasTokens, f.PromptTokens, f.HasPrompt)
	s.gate.Add(f.Gate, n, ok, s.max)
}

// writeGate ends the T line with the gate's counts: empty, no reasoning,
// stray markers, over max_length, unmeasured, pass if not thinking, pass
// if thinking, and the max_length judged against (pipeline's
// parseTokenSums).
func (s rangeSum) writeGate(w *bytes.Buffer) {
	g := s.gate
	maxLength := g.MaxLength
	if g.Records == 0 {
		maxLength = s.max
	}
	fmt.Fprintf(w, " %d %d %d %d %d %d %d %d\n", g.Empty, g.NoReasoning, g.Stray, g.Over, g.Unmeasured, g.PassPlain, g.PassThinking, maxLength)
}

// keptGate says kept sums' gate counts hold under maxLength.
func keptGate(kept *sumState, maxLength int64) bool {
	return kept.G.Records == 0 || kept.G.MaxLength == maxLength
}

// gateRules caches each root's max_length by its pipeline.toml's size and
// mtime: a stat a request, a read when it changes.
type gateRules struct {
	mu    sync.Mutex
	roots map[string]gateRoot
}

type gateRoot struct {
	size  int64
	mtime time.Time
	max   int64
}

var agentGate = gateRules{roots: map[string]gateRoot{}}

// maxGateRoots bounds the roots remembered (a host has a few).
const maxGateRoots = 1000

// gateMax is the max_length of the root p's category folder is in: 0
// when the file is not a root's category file, the root has no
// pipeline.toml, or it cannot be read (the laptop reads the same file).
func (ts *tokenSums) gateMax(p string) int64 {
	dir := filepath.Dir(filepath.Dir(p))
	if filepath.Base(dir) != parse.PreparedDir {
		return 0
	}
	return agentGate.maxOf(filepath.Join(filepath.Dir(dir), parse.ManifestPath))
}

func (g *gateRules) maxOf(manifest string) int64 {
	fi, err := os.Stat(manifest)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	g.mu.Lock()
	r, ok := g.roots[manifest]
	g.mu.Unlock()
	if ok && r.size == fi.Size() && r.mtime.Equal(fi.ModTime()) {
		return r.max
	}
	r = gateRoot{size: fi.Size(), mtime: fi.ModTime()}
	if f, err := openRegular(manifest); err == nil {
		b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
		f.Close()
		if m, err := parse.ParseManifest(b); parse.ManifestUsable(err) {
			r.max = m.Gate.MaxLength
		}
	}
	g.mu.Lock()
	if len(g.roots) >= maxGateRoots {
		clear(g.roots)
	}
	g.roots[manifest] = r
	g.mu.Unlock()
	return r.max
}

package remote

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// A link that cannot be followed says why, in the fallback and in the
// agent alike: one whose target is not there names the target; a loop
// is a loop, not a disk to go and mount.
func TestALinkThatCannotBeFollowedSaysWhy(t *testing.T) {
	testgate.E2E(t) // the agent: the built binary
	dir := t.TempDir()
	dangling, loop := filepath.Join(dir, "dangling.jsonl"), filepath.Join(dir, "loop.jsonl")
	must(t, os.Symlink(filepath.Join(dir, "scratch", "raw.jsonl"), dangling))
	must(t, os.Symlink(loop, loop))
	// a target ending in newlines: the script's $(readlink) drops them, and
	// so does the agent
	nl := filepath.Join(dir, "nl.jsonl")
	must(t, os.Symlink(filepath.Join(dir, "x\n\n"), nl))
	batch := func() *Batch {
		b := &Batch{}
		b.Count(NewCounter(dangling))
		b.Count(NewCounter(loop))
		b.Cat(dangling, 100)
		b.Cat(loop, 100)
		b.Count(NewCounter(nl))
		b.Cat(nl, 100)
		return b
	}
	want := map[string]string{dangling: "a link to " + filepath.Join(dir, "scratch", "raw.jsonl") + ", which is not there", loop: "too many levels of symbolic links", nl: "a link to " + filepath.Join(dir, "x") + ", which is not there"}
	check := func(who string, a *answers) {
		t.Helper()
		for p, w := range want {
			st, ok := a.stats[p]
			if !ok || st.err == nil || !strings.Contains(strings.ToLower(st.err.Error()), strings.ToLower(w)) {
				t.Errorf("%s: the stat of %s says %v, want %q", who, filepath.Base(p), st.err, w)
			}
			rs := a.reads[p]
			if len(rs) == 0 || rs[0].err == nil || !strings.Contains(strings.ToLower(rs[0].err.Error()), strings.ToLower(w)) {
				t.Errorf("%s: the read of %s says %v, want %q", who, filepath.Base(p), rs, w)
			}
			if errKind(st.err) != "err" {
				t.Errorf("%s: %s is %s, want an error (it is there, as a link)", who, filepath.Base(p), errKind(st.err))
			}
		}
	}
	b := batch()
	res, err := Local{}.Exec(context.Background(), b.Argv()...)
	must(t, err)
	fb, err := parseBatchOf(res.Stdout, b, nil)
	must(t, err)
	check("fallback", fb)
	ag, err := both(t)["go"].Run(context.Background(), batch())
	must(t, err)
	check("agent", ag)
}

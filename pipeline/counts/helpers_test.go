package counts

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

func mkdir(t testing.TB, p string) { t.Helper(); must(t, os.MkdirAll(p, 0o755)) }
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
func write(t *testing.T, p, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	must(t, os.WriteFile(p, []byte(s), 0o644))
}
func appendTo(t testing.TB, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.WriteString(s)
	must(t, err)
}

func localHost() remote.Host { return remote.Local{} }

// newSet is the categories' part of a Watcher of root on this machine.
func newSet(root string) *Set {
	return New(Config{Layout: parseLayout(root), History: 120, StallAfter: 10 * time.Minute, Timeline: timeline.New(500, "")})
}

// pollSet is one poll of k as a Watcher of a host without a batch makes
// it, in the Watcher's order: the plan, the manifest and folders on a full
// poll, the counts, the host's sums and the records' spans, their folds, the
// judgement (no worker, no server known).
func pollSet(t *testing.T, k *Set, h remote.Host, now time.Time, full bool) {
	t.Helper()
	ctx := context.Background()
	jobs, spanArgv := k.Plan(false, false)
	if full {
		_, err := k.Discover(ctx, h, FindAsks{})
		must(t, err)
	}
	tails, counters := k.Files(full)
	res := (&remote.Poller{Tails: tails, Counters: counters}).Poll(ctx, h)
	sums, spans := ReadSums(ctx, h, jobs, nil), ReadSpans(ctx, h, spanArgv, nil)
	k.Fold(res, now, nil)
	k.FoldSpans(spans, time.UTC, now)
	k.FoldTokens(res, jobs, sums)
	k.FoldRuns(res.Tails)
	k.Judge(Inputs{}, now)
}

func parseLayout(root string) parse.Layout { return parse.Layout{Root: root} }

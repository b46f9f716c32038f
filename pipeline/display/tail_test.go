package display

import (
	"slices"
	"testing"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

func lines(ss ...string) []remote.Line {
	out := make([]remote.Line, len(ss))
	for i, s := range ss {
		out[i] = remote.Line{Text: s}
	}
	return out
}

// Two servers' logs share a ring: each first read shows its screen's
// lines (not the digest it holds for the fold), and each one's older
// lines, coming a poll after in either order, go before its own first
// lines, so the ring reads as two plain first reads would have filled
// it. A log truncated before its older lines came takes none.
func TestPanesPutOlderLinesWhereTheirFirstReadBegan(t *testing.T) {
	for _, aFirst := range []bool{true, false} {
		r := snapshot.NewRing(100)
		var a, b, c Pane
		a.Add(r, remote.TailUpdate{Event: remote.TailAttached, OlderDue: true, Held: 2, Lines: lines("a-digest1", "a-digest2", "a5", "a6")}, "A ")
		b.Add(r, remote.TailUpdate{Event: remote.TailAttached, OlderDue: true, Held: 1, Lines: lines("b-digest", "b3")}, "B ")
		c.Add(r, remote.TailUpdate{Event: remote.TailAttached, OlderDue: true, Held: 1, Lines: lines("c-digest", "c9")}, "C ")
		older := func(p *Pane, tag string, ls ...string) {
			p.Add(r, remote.TailUpdate{OlderDone: true, Older: lines(ls...), Lines: lines("new")}, tag+" ")
		}
		c.Add(r, remote.TailUpdate{Event: remote.TailTruncated, OlderDone: true}, "C ")
		if aFirst {
			older(&a, "A", "a-hist", "a3", "a4")
			older(&b, "B", "b-hist", "b1", "b2")
		} else {
			older(&b, "B", "b-hist", "b1", "b2")
			older(&a, "A", "a-hist", "a3", "a4")
		}
		want := []string{"A a-hist", "A a3", "A a4", "A a5", "A a6", "B b-hist", "B b1", "B b2", "B b3", "C c9"}
		if aFirst {
			want = append(want, "A new", "B new")
		} else {
			want = append(want, "B new", "A new")
		}
		if got := r.Lines(); !slices.Equal(got, want) {
			t.Fatalf("a first %v:\n%q\nwant\n%q", aFirst, got, want)
		}
	}
}

package remote

import (
	"fmt"
	"testing"
)

// BenchmarkPlan50k: the laptop's plan of a steady request of 50,000
// categories (a Count of each one's three files and a Tail of its
// runs.jsonl, the shapes and paths sent by an earlier poll), as an idle
// poll of BenchmarkIdleWatch50k writes it.
func BenchmarkPlan50k(b *testing.B) {
	const n = 50000
	var tails []*Tail
	var counters []*Counter
	for i := range n {
		d := fmt.Sprintf("/data/night/prepared/B%05d_category", i)
		counters = append(counters, NewCounter(d+"/raw_responses.jsonl"), NewCounter(d+"/errors.jsonl"), NewCounter(d+"/prompts.jsonl"))
		tails = append(tails, NewTail(d+"/runs.jsonl"))
	}
	batch := func() *Batch {
		bt := &Batch{}
		for i := range n {
			bt.Tail(tails[i])
			for _, c := range counters[3*i : 3*i+3] {
				bt.Count(c)
			}
		}
		return bt
	}
	a := &Agent{alias: map[string]int{}, keys: map[string]int{}}
	first := a.plan(batch())
	if len(first.Calls) != 4*n || len(first.Strings) < 4*n {
		b.Fatalf("%d calls, %d strings", len(first.Calls), len(first.Strings))
	}
	steady := batch()
	b.ReportAllocs()
	for b.Loop() {
		if req := a.plan(steady); len(req.Shapes) != 0 || len(req.Strings) != 0 || len(req.Calls) != 4*n {
			b.Fatalf("steady: %d shapes, %d strings, %d calls", len(req.Shapes), len(req.Strings), len(req.Calls))
		}
	}
}

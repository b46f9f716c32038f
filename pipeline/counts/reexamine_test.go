package counts

import (
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// A file the fallback's awk summed (tokens only: its records not
// examined) is summed again whole once the agent answers, so a dashboard
// that began on the fallback while the agent installed does not say "not
// examined" all night; a tally with a hole or a torn last line is left
// to its job.
func TestReexamineWhatTheAwkSummed(t *testing.T) {
	t.Parallel()
	k := &Set{cats: map[string]*catState{}}
	c := &catState{name: "B1", raw: remote.NewCounter("/r/prepared/B1/raw_responses.jsonl")}
	k.cats["B1"], k.order = c, []string{"B1"}
	awk, err := parseTokenSums([]byte("1 T 10 500 1000 0\n"), 1)
	if err != nil {
		t.Fatal(err)
	}
	c.tok.cur, c.tok.start = 1000, 1000
	c.tok.sum.merge(awk[0].t)
	if c.tok.sum.out.Unexamined != 10 {
		t.Fatalf("the awk's sum: %+v", c.tok.sum.out)
	}
	k.Reexamine()
	jobs := k.TokenJobs(-1)
	if len(jobs) != 1 || jobs[0].from != 0 || jobs[0].n != 1000 {
		t.Fatalf("jobs %+v, want the whole file", jobs)
	}
	agent, err := parseTokenSums([]byte("1 T 10 500 1000 0 8 2 0 0 0 2 120 10\n"), 1)
	if err != nil {
		t.Fatal(err)
	}
	c.tok.answer(jobs[0], &agent[0])
	c.tok.job = nil
	want := parse.Outcomes{Records: 10, Stop: 8, Length: 2, Empty: 2, PromptTokens: 120, PromptRecords: 10}
	if !c.tok.complete() || c.tok.sum.out != want || c.tok.sum.Records != 10 || c.tok.sum.Tokens != 500 {
		t.Fatalf("after the agent's sum: complete %v, %+v, %+v", c.tok.complete(), c.tok.sum.out, c.tok.sum.Tally)
	}
	k.Reexamine() // examined: nothing to do
	if jobs := k.TokenJobs(-1); len(jobs) != 0 {
		t.Fatalf("a second pass: %+v", jobs)
	}
	c.tok.sum.out.Unexamined, c.tok.partial = 3, []byte(`{"id":`) // a torn last line: left alone
	k.Reexamine()
	if c.tok.hole || c.tok.sum.Records != 10 {
		t.Fatalf("a tally with a torn last line was redone")
	}
}

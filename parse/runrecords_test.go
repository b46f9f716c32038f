package parse

import (
	"fmt"
	"testing"
)

// A file naming a new run on every line keeps MaxRecordRuns entries; the
// records past them, and those of runs no worker writes, are counted
// under OtherRuns, none lost.
func TestRunRecordsBounded(t *testing.T) {
	var m RunRecords
	const n = 3 * MaxRecordRuns
	for i := range n {
		m.Add(fmt.Sprintf("run-%d", i), OneRecord(2, true))
	}
	m.Add("", OneRecord(5, true))                       // the old script's
	m.Add("a\n1 T 999 999 999 999", OneRecord(1, true)) // a forged answer line
	if len(m) > MaxRecordRuns+2 {
		t.Fatalf("%d runs kept, bound %d", len(m), MaxRecordRuns)
	}
	var sum Tally
	for run, x := range m {
		for i := 0; i < len(run); i++ {
			if run[i] < 0x20 {
				t.Fatalf("a run with a control byte kept: %q", run)
			}
		}
		sum.Add(x)
	}
	if sum.Records != n+2 || sum.Tokens != 2*n+6 {
		t.Fatalf("records %d tokens %d, want %d and %d", sum.Records, sum.Tokens, n+2, 2*n+6)
	}
	if m[""] != OneRecord(5, true) {
		t.Fatalf("the old script's records: %+v", m[""])
	}
	if m["run-0"].Records != 1 || m[OtherRuns].Records != n-MaxRecordRuns+1 {
		t.Fatalf("run-0 %+v, other runs %+v", m["run-0"], m[OtherRuns])
	}
	var again RunRecords
	again.Merge(m)
	if len(again) != len(m) || again[OtherRuns] != m[OtherRuns] {
		t.Fatalf("merged: %d runs, other %+v; want %d, %+v", len(again), again[OtherRuns], len(m), m[OtherRuns])
	}
}

// Past the bound, which runs keep a slot does not hang on a map's order:
// two files of 600 runs merged keep the same 1,024, the first by name.
func TestRunRecordsMergeKeepsTheSameRuns(t *testing.T) {
	a, b := RunRecords{}, RunRecords{}
	for i := range 600 {
		a.Add(fmt.Sprintf("r%04d", i), OneRecord(1, true))
		b.Add(fmt.Sprintf("r%04d", 600+i), OneRecord(1, true))
	}
	var first RunRecords
	for try := range 20 {
		var m RunRecords
		m.Merge(a)
		m.Merge(b)
		if try == 0 {
			first = m
			continue
		}
		for run := range m {
			if _, ok := first[run]; !ok {
				t.Fatalf("try %d kept %q, the first did not", try, run)
			}
		}
	}
	if _, ok := first["r1023"]; !ok || first[OtherRuns].Records != 176 {
		t.Fatalf("kept r1023: %v; other runs %+v, want 176", ok, first[OtherRuns])
	}
}

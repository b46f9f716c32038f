package parse

import "sort"

// MaxRecordRuns bounds the runs a file's records are counted apart by
// (provenance: each run's records under its configuration). A night has
// tens of runs; a file that names a new run on every line had no bound
// (300,000 run ids took 192 MB on the laptop, and as much in the agent).
const MaxRecordRuns = 1024

// OtherRuns is the key the records past that bound are counted under, and
// those whose run no worker writes (over 256 bytes, or a control byte:
// a run read from a file is written into the agent's answer a line a
// run, where a newline in it would be a line of its own). No runs.jsonl
// names it, so its records read "unknown config".
const OtherRuns = "(other runs)"

// RunSlot is the key run's records are counted under in m: run itself,
// or OtherRuns once m holds MaxRecordRuns runs ("" and OtherRuns aside:
// the old script's records always have theirs, they are placed by time).
func RunSlot[V any](m map[string]V, run string) string {
	if len(run) > 256 {
		return OtherRuns
	}
	for i := 0; i < len(run); i++ {
		if run[i] < 0x20 || run[i] == 0x7f {
			return OtherRuns
		}
	}
	if _, has := m[run]; has || run == "" || run == OtherRuns {
		return run
	}
	n := len(m)
	for _, k := range []string{"", OtherRuns} {
		if _, ok := m[k]; ok {
			n--
		}
	}
	if n < MaxRecordRuns {
		return run
	}
	return OtherRuns
}

// RunRecords counts a file's records by the run that wrote them ("": the
// old script's, which name none), bounded by RunSlot.
type RunRecords map[string]Tally

// Add counts t under run's slot.
func (m *RunRecords) Add(run string, t Tally) {
	if *m == nil {
		*m = RunRecords{}
	}
	k := RunSlot(*m, run)
	x := (*m)[k]
	x.Add(t)
	(*m)[k] = x
}

// Merge adds o's runs, in the order of their names: past the bound, the
// same runs keep a slot whatever the maps' order (run ids begin with
// their start time, so the first runs of the night).
func (m *RunRecords) Merge(o RunRecords) {
	for _, run := range SortedRuns(o) {
		m.Add(run, o[run])
	}
}

// SortedRuns are m's runs by name.
func SortedRuns[V any](m map[string]V) []string {
	runs := make([]string, 0, len(m))
	for r := range m {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	return runs
}

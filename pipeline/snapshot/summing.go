package snapshot

import "fmt"

// Summing is how far the host has summed the tokens of records already
// counted (a first look at a night written while no dashboard watched, a
// file replaced): the bytes summed of the bytes to sum, from where the
// sum began. A category has it while it has no token figure and its sum
// is under way; the Snapshot's is every such category's added up.
type Summing struct {
	Done  int64 `json:"done_bytes"`
	Total int64 `json:"total_bytes"`
	// Resume: the Go agent sums it within the dashboard's time budget
	// (remote/tokensum.go's within=), and goes on where its last answer
	// stopped: the next poll is asked at once
	Resume bool `json:"resume,omitempty"`
}

// Percent is Done of Total in whole per cent, never 100 while summing.
func (s Summing) Percent() int {
	if s.Total <= 0 || s.Done <= 0 {
		return 0
	}
	return int(min(99, s.Done*100/s.Total))
}

// Text is what every view says of it in place of a figure: "summing… 40 %".
func (s Summing) Text() string { return fmt.Sprintf("summing… %d %%", s.Percent()) }

// Add is s and o together (nil: none yet).
func (s *Summing) Add(o Summing) *Summing {
	if s == nil {
		return &o
	}
	return &Summing{Done: s.Done + o.Done, Total: s.Total + o.Total, Resume: s.Resume || o.Resume}
}

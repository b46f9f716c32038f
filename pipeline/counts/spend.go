package counts

import "github.com/synthwatch/synthwatch/pipeline/snapshot"

// runTallies gives each run of v's history its tally on the category
// (runs.jsonl's tally lines, each run's last).
func runTallies(c *catState, v *snapshot.Category) {
	for i := range v.Runs {
		if rt, ok := c.tallies.Of(v.Runs[i].Run); ok {
			v.Runs[i].Tally = &rt
		}
	}
}

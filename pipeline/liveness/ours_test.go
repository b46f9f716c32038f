package liveness

import "testing"

// Our host agent is never the root's worker, whatever a scan of the
// host's descriptors says of it; a worker is not taken for it.
func TestOurAgentIsNoWriter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		ours bool
	}{
		{[]string{"/root/.cache/synthwatch/agent/13-linux-amd64/synthwatch", "agent", "--serve", "synthwatch-agent/13", "--skip", "0", "~081d"}, true},
		{[]string{"sh", "-c", "…", "synthwatch-holders", "-lname", "x"}, true},
		{[]string{"/usr/local/bin/synthwatch", "worker", "--root", "/data/run"}, false},
		{[]string{"python3", "run_inference.py", "--serve"}, false},
		{[]string{"synthwatch", "agent"}, false},
	} {
		if got := ourHelper(tc.args); got != tc.ours {
			t.Errorf("%q: ours %v, want %v", tc.args, got, tc.ours)
		}
	}
}

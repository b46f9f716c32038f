package actions

import (
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The kill action writes the marker parse.FormatKill makes.
func TestKillArgvWritesTheMarker(t *testing.T) {
	t.Parallel()
	argv := KillArgv(4242, 99, 30*time.Second, "/r/logs/inference_all.log", "/r/run/synthwatch-kill")
	if got := argv[len(argv)-1]; got != parse.FormatKill(4242, 30*time.Second) {
		t.Fatalf("marker argument %q", got)
	}
}

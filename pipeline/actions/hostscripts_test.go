package actions

import (
	"strings"
	"testing"
)

// The host files (remote/host) spell out what Go names as constants: a
// script file cannot say serverOnStdin. Each must still be the constant
// (vitals.sh's: pipeline/vitals).
func TestHostScriptsSayTheConstants(t *testing.T) {
	for _, c := range []struct{ name, script, want string }{
		{"launch.sh", launchScript, `if [ "$1" = ` + serverOnStdin + " ]; then\n"},
	} {
		if !strings.Contains(c.script, c.want) {
			t.Errorf("%s does not say %q", c.name, c.want)
		}
	}
}

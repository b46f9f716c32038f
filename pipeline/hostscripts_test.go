package pipeline

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// The host files (remote/host) spell out what Go names as constants: a
// script file cannot say parse.GPUQuery. Each must still be the constant.
func TestHostScriptsSayTheConstants(t *testing.T) {
	for _, c := range []struct{ name, script, want string }{
		{"vitals.sh", vitalsScript, "s() { printf '" + parse.VitalsMark + "%s %d\\n%s\\n'"},
		{"vitals.sh", vitalsScript, " --query-gpu=" + parse.GPUQuery + " "},
		{"vitals.sh", vitalsScript, " --query-compute-apps=" + parse.GPUAppsQuery + " "},
		{"launch.sh", launchScript, `if [ "$1" = ` + serverOnStdin + " ]; then\n"},
	} {
		if !strings.Contains(c.script, c.want) {
			t.Errorf("%s does not say %q", c.name, c.want)
		}
	}
}

package vitals

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
)

// vitals.sh (remote/host) spells out what Go names as constants: a script
// file cannot say parse.GPUQuery. Each must still be the constant.
func TestScriptSaysTheConstants(t *testing.T) {
	for _, want := range []string{
		"s() { printf '" + parse.VitalsMark + "%s %d\\n%s\\n'",
		" --query-gpu=" + parse.GPUQuery + " ",
		" --query-compute-apps=" + parse.GPUAppsQuery + " ",
	} {
		if !strings.Contains(vitalsScript, want) {
			t.Errorf("vitals.sh does not say %q", want)
		}
	}
}

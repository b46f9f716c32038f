package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An account whose HOME does not exist (and cannot be made): the worker
// deploys to a folder it may write, but the agent's install, which goes
// under HOME, names the directory it could not write and who could not,
// as deploy's own write does, not a mkdir's bare exit.
func TestAgentInstallNamesAnUnwritableHome(t *testing.T) {
	u := addUser(t, "i", "-M", "-d", fmt.Sprintf("/nonexistent-swi%d", os.Getpid()))
	lab := newTwoUserLab(t, u)
	dest := filepath.Join(lab.shared, "w", "synthwatch")
	out, errOut, code := deployBin(t, lab.sshd, u.Name+"@"+lab.sshd.Addr(), "--worker-bin", dest)
	for _, want := range []string{
		"the worker is at " + dest + ", but install the agent to " + u.Home + "/.cache/synthwatch/agent/",
		": " + u.Home + "/.cache/synthwatch/agent/",
		" does not exist, and / cannot be written by " + u.Name + " (drwxr-xr-x",
	} {
		if code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("deploy with no HOME: code %d: %s%s\nwant %q", code, out, errOut, want)
		}
	}
}

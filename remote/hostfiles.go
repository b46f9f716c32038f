package remote

import (
	"embed"
	"strings"
)

// hostFiles are the host-side programs sent as `sh -c` scripts, one file
// each in host/ so that shellcheck checks them and dash, bash and busybox
// sh run them in the tests.
//
//go:embed host/*.sh
var hostFiles embed.FS

// HostScript is host/NAME as it crosses the link: its code (shCode), each
// line ". ./OTHER.sh" replaced by OTHER.sh's code. The host has no such
// file: a part two scripts share (the launch's checks) is written once
// and sent inline. ". ./InstalledAgentSh" is InstalledAgentSh, made in Go
// as it carries the agent's protocol. An unknown name panics: callers
// name constants, read when their package starts, so any test catches it.
func HostScript(name string) string {
	src, err := hostFiles.ReadFile("host/" + name)
	if err != nil {
		panic(err)
	}
	var b strings.Builder
	for _, l := range strings.SplitAfter(shCode(string(src)), "\n") {
		inc, ok := strings.CutPrefix(strings.TrimSuffix(l, "\n"), ". ./")
		switch {
		case ok && inc == "InstalledAgentSh":
			b.WriteString(InstalledAgentSh)
		case ok:
			b.WriteString(HostScript(inc))
		default:
			b.WriteString(l)
		}
	}
	return b.String()
}

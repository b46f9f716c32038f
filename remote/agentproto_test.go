package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// agentScriptCode is agentScript and its launcher without their comments
// and blank lines: what a change of must bump AgentProto.
func agentScriptCode() string {
	var code []string
	for _, l := range strings.Split(agentLauncher+"\n"+agentScript, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			code = append(code, l)
		}
	}
	h := sha256.Sum256([]byte(strings.Join(code, "\n")))
	return hex.EncodeToString(h[:8])
}

// The protocol's version is explicit: editing a comment of the agent's
// script keeps it (it used to be the script's hash, so a comment sent every
// deployed binary back to the shell), and a change of its code fails here
// until AgentProto is bumped and the new code's hash recorded with it.
func TestAgentProtoFollowsTheScript(t *testing.T) {
	t.Parallel()
	const proto, code = "synthwatch-agent/7", "9eb03a1ec8cc624c"
	if got := agentScriptCode(); AgentProto != proto || got != code {
		t.Fatalf("agentScript's code is %s under AgentProto %q: if the protocol or its answers changed, bump AgentProto; then record both here (proto %q, code %q)",
			got, AgentProto, AgentProto, got)
	}
}

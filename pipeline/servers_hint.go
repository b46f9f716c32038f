package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// ServersHint is what pipeline.toml said about the host's servers when
// this machine last read it: a cache beside the history, so the first
// poll probes them beside its reads instead of after pipeline.toml comes
// back (two round trips more, a channel open and an HTTP exchange, for a
// job whose server is not on the configured URL). It is never taken for
// the manifest: once pipeline.toml is read, a set that differs is probed
// then, as without a hint.
type ServersHint struct {
	Server  string              `json:"server,omitempty"`
	Servers []parse.ServerEntry `json:"servers,omitempty"`
	// NoAgent: the host had no agent of this protocol (remote.AgentProto)
	// last time: the next cold start reads by the fallback beside the
	// launcher (requestEither), not after its "none here".
	NoAgent string `json:"no_agent,omitempty"`
	// Unpacks: the host's fallback said it has base64 and gzip: its
	// polls, the next cold one too, travel packed on the command line
	// (remote.PackCommand), a round trip less on OpenSSH.
	Unpacks bool `json:"unpacks,omitempty"`
	// Platform: the host's platform as its agent's last hello named it
	// ("linux-amd64"): the launcher runs that agent without a uname
	// (remote.Agent.SetPlatform).
	Platform string `json:"platform,omitempty"`
	// AgentProgs: the digest of the programs that agent carried, as its
	// last hello said it: where it is this build's, the first request
	// names them rather than send their text (remote.Agent.SetProgs).
	AgentProgs string `json:"agent_progs,omitempty"`
	// LoginCsh: the user's login shell ends a command at a newline even
	// inside quotes (csh, tcsh: remote.SSH.NoteLoginCsh): the next run's
	// commands go without one from the first, not after a refusal.
	LoginCsh bool `json:"login_csh,omitempty"`
}

// HintPath is the hint's file for a host and root, beside its history.
func HintPath(host, root string) string {
	return strings.TrimSuffix(timeline.StatePath(host, root), ".jsonl") + ".servers.json"
}

// ReadServersHint reads a hint; nil when there is none or it is not one.
func ReadServersHint(path string) *ServersHint {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 1<<20 {
		return nil
	}
	var h ServersHint
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

// write keeps have at path when it differs from h, the hint read at the
// start or written since (most runs write nothing), and returns the hint
// as it now stands. Errors are ignored: a hint only saves round trips.
func (h *ServersHint) write(path string, have ServersHint) *ServersHint {
	if path == "" || (h == nil && have.Server == "" && len(have.Servers) == 0 && have.NoAgent == "" && !have.Unpacks && have.Platform == "" && have.AgentProgs == "" && !have.LoginCsh) {
		return h
	}
	old, _ := json.Marshal(h)
	b, err := json.Marshal(have)
	if err != nil || string(old) == string(b) {
		return h
	}
	os.MkdirAll(filepath.Dir(path), 0o700)
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		os.Rename(tmp, path)
	}
	return &have
}

package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
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
	// launcher (prefetchEither), not after its "none here".
	NoAgent string `json:"no_agent,omitempty"`
	// Unpacks: the host's fallback said it has base64 and gunzip: its
	// polls, the next cold one too, travel packed on the command line
	// (remote.PackCommand), a round trip less on OpenSSH.
	Unpacks bool `json:"unpacks,omitempty"`
}

// HintPath is the hint's file for a host and root, beside its history.
func HintPath(host, root string) string {
	return strings.TrimSuffix(StatePath(host, root), ".jsonl") + ".servers.json"
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

// writeServersHint keeps the servers pipeline.toml named, when they
// differ from the hint read at the start (most runs write nothing).
// Errors are ignored: a hint only saves round trips.
func (w *Watcher) writeServersHint() {
	have := ServersHint{Server: w.cnt.manifest.Server, Servers: w.cnt.manifest.Servers, NoAgent: w.noAgent, Unpacks: w.pre != nil && w.pre.Unpacks()}
	if !w.cnt.haveMan && w.hint != nil { // pipeline.toml not read yet: its servers as the hint had them
		have.Server, have.Servers = w.hint.Server, w.hint.Servers
	}
	if w.o.HintPath == "" || (w.hint == nil && have.Server == "" && len(have.Servers) == 0 && have.NoAgent == "" && !have.Unpacks) {
		return
	}
	old, _ := json.Marshal(w.hint)
	b, err := json.Marshal(have)
	if err != nil || string(old) == string(b) {
		return
	}
	os.MkdirAll(filepath.Dir(w.o.HintPath), 0o700)
	tmp := w.o.HintPath + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		os.Rename(tmp, w.o.HintPath)
	}
	w.hint = &have
}

// noteUnpack keeps, for the hint, what the fallback's last answer said of
// unpacking, when it differs from the hint's.
func (w *Watcher) noteUnpack() {
	if w.pre != nil && w.pre.Unpacks() != (w.hint != nil && w.hint.Unpacks) {
		w.writeServersHint()
	}
}

// serverManifest is the manifest serverSpecs reads: pipeline.toml once
// read, else the hint; one that does not parse lists none (those
// configured stand).
func (w *Watcher) serverManifest() parse.Manifest {
	if !w.cnt.haveMan && w.cnt.manErr == nil && w.hint != nil {
		return parse.Manifest{Server: w.hint.Server, Servers: w.hint.Servers}
	}
	return w.cnt.manifest
}

package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// progs are the host programs a poll runs as `sh -c TEXT` that the Go
// agent carries too: a request names one (agentproto.Arg.Prog) rather
// than send its text, which was 2.8 KB of a cold status's first request
// (deflated and in base64 on the command line, 0.5 KB of a status's bytes
// on the wire, 1.8 KB of the dashboard's first table's). The
// agent takes the name for its own copy of the text and answers it as
// that text (answerNative's programs in Go, recspan's in Go too). Their
// texts are part of the protocol: TestProgsAreTheVersions wants a new
// agentproto.Version when one changes. A request names them only to an
// agent whose hello (or the hint's word of it) said this build's digest,
// and an agent refuses one whose digest is not its own.
var progs = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"zone":    zoneScript,
		"owner":   ownerScript,
		"holders": holdersScript,
		"vitals":  vitalsScript,
		"recspan": recSpanScript,
	}
})

// progNames is progs read the other way: a text's name.
var progNames = sync.OnceValue(func() map[string]string {
	m := map[string]string{}
	for n, t := range progs() {
		m[t] = n
	}
	return m
})

// progsDigest names this build's progs: the agent's Hello.Progs, and a
// request's that names one (agentproto.Request.Progs).
var progsDigest = sync.OnceValue(func() string {
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(progs())) {
		fmt.Fprintf(h, "%s\x00%d\x00%s", n, len(progs()[n]), progs()[n])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

package remote

import "sync"

// progs are the host programs a poll runs as `sh -c TEXT` that the Go
// agent carries too: a request names one (agentproto.Arg.Prog) rather
// than send its text, which was 2.8 KB of a cold status's first request
// (1.7 KB on the wire, deflated and in base64 on the command line). The
// agent takes the name for its own copy of the text and answers it as
// that text (answerNative's programs in Go, recspan's in Go too). Their
// texts are part of the protocol: TestProgsAreTheVersions wants a new
// agentproto.Version when one changes.
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

package pipeline

import (
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// redact hides the URLs' passwords in what a Snapshot says (status --json,
// the views, the events): the servers keep theirs for the probes, which
// need them, and nothing shown or stored carries them. The slices it
// changes are the Snapshot's own copies (project builds them afresh).
func redact(s *snapshot.Snapshot) {
	redactServer(&s.Server)
	for i := range s.Servers {
		redactServer(&s.Servers[i])
	}
	s.Worker.Command, s.Worker.Reason = parse.Redact(s.Worker.Command), parse.Redact(s.Worker.Reason)
	for i := range s.Warnings {
		s.Warnings[i] = parse.Redact(s.Warnings[i])
	}
	for i := range s.Alerts {
		s.Alerts[i].Text = parse.Redact(s.Alerts[i].Text)
	}
	for i := range s.Events {
		s.Events[i].Text = parse.Redact(s.Events[i].Text)
	}
	for i := range s.Categories {
		s.Categories[i].Reason = parse.Redact(s.Categories[i].Reason)
	}
}

func redactServer(v *snapshot.Server) {
	v.URL, v.Via, v.Reason = parse.Redact(v.URL), parse.Redact(v.Via), parse.Redact(v.Reason)
	v.LastCrash = parse.Redact(v.LastCrash)
}

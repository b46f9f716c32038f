package snapshot

import (
	"fmt"
	"time"
)

// LinkQuiet is a link that counts as up but has not answered for two
// polls (a black hole: a suspended sshd, a dead route, before the
// keepalives give it up). Only a Snapshot made without a poll's answer
// (QuietSnapshot) carries it; the link itself never reports it.
const LinkQuiet LinkPhase = "quiet"

// QuietAfter is how long without an answer makes a link quiet: two poll
// intervals, and a second for a poll's own time.
func QuietAfter(every time.Duration) time.Duration { return 2*every + time.Second }

// Quiet says whether the figures may be old at now for a host polled
// every every: a link that is not up, or one with no answer within the
// last two polls. "Connected" means an answer within them. The one test
// of the dashboard's header, the fleet row and status --follow.
func (c Connection) Quiet(now time.Time, every time.Duration) bool {
	if !c.Linked() {
		return false
	}
	if c.State != LinkConnected {
		return true
	}
	return c.LastContact == nil || now.Sub(*c.LastContact) > QuietAfter(every)
}

// StaleFigures turns prev's figures into s's as they stand when the host
// cannot be read: counts kept, every state unknown, no rate, no ETA.
func StaleFigures(prev Snapshot, s *Snapshot) {
	s.Worker = Worker{State: WorkerUnknown, PID: prev.Worker.PID, Category: prev.Worker.Category}
	s.CompletionTokens, s.TokensUnknown, s.TokensPartial = prev.CompletionTokens, prev.TokensUnknown, prev.TokensPartial // counted, as the rows' done: kept
	// as far as the sum had come (the categories' too)
	s.TokensSumming = prev.TokensSumming
	// the forecast is kept with the tokens it counts; the free disk is not known now
	if c := prev.Capture; c != nil {
		cp := *c
		cp.FreeBytes, cp.Fits = nil, nil
		s.Capture = &cp
	}
	s.Spend = prev.Spend // what the runs' tallies said, as the categories' (kept with them)
	s.Server = Server{State: ServerUnknown}
	s.Servers = nil
	for _, v := range prev.Servers { // each one unknown too: its figures are from before the link dropped
		s.Servers = append(s.Servers, Server{State: ServerUnknown, URL: v.URL, Name: v.Name, Role: v.Role, Via: v.Via})
	}
	s.Categories = nil
	for _, c := range prev.Categories {
		c.State, c.ETASeconds, c.RatePerMin, c.TokPerSec = StateUnknown, nil, 0, nil
		s.Categories = append(s.Categories, c)
	}
	s.ETASeconds = nil
}

// QuietSnapshot is what a view shows at now while a poll has not
// answered: prev's figures made stale, stamped with now (not with the
// poll's start), the link c as it stands (connected but quiet is
// LinkQuiet), and a warning with the last answer's age.
func QuietSnapshot(prev Snapshot, c Connection, now time.Time) Snapshot {
	s := Snapshot{Schema: 1, Time: now.UTC(), Host: prev.Host, Root: prev.Root, Connection: c, Warnings: []string{}, Events: prev.Events,
		Vitals: Vitals{}, Baseline: prev.Baseline}
	if s.Connection.State == LinkConnected {
		s.Connection.State = LinkQuiet
	}
	StaleFigures(prev, &s)
	s.Server.Throughput = prev.Server.Throughput
	text := "no answer from the host"
	if c.LastContact != nil {
		text += fmt.Sprintf(" for %s", now.Sub(*c.LastContact).Round(time.Second))
	}
	if !prev.Time.IsZero() {
		text += ": figures are from " + prev.Time.Local().Format("15:04:05")
	}
	s.Warn(WarnNoContact, text)
	return s
}

package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// FleetPollResult is host i's poll message, for harnesses that drive the
// fleet without a program (PollResult for one host).
func FleetPollResult(f tea.Model, i int, snap snapshot.Snapshot, be Backend) tea.Msg {
	return hostMsg{i: i, msg: PollResult(f.(Fleet).hosts[i], snap, be)}
}

// fleetRow is one host's figures on the fleet screen, read from its last
// Snapshot and its link now.
type fleetRow struct {
	name     string
	have     bool // a Snapshot has come
	reached  bool // the host answered once: a Snapshot, or a contact
	stale    bool // the figures may be old: no live link, or no contact for two polls
	age      time.Duration
	done     int64
	target   int64
	recMin   float64
	tokS     float64
	eta      *float64 // nil: no figure (stale, or nothing measured)
	finished bool     // every category is final
	kwh      *float64 // the night's energy (parse.Spend.KWh); nil: not measured
	alerts   []string
}

// row reads host m's figures for the fleet screen.
func (m Model) row(now time.Time) fleetRow {
	r := fleetRow{name: m.be.Host(), have: m.haveSnap}
	if lc := lastContact(m.conn); !lc.IsZero() {
		r.age = now.Sub(lc)
	}
	r.reached = m.haveSnap || r.age > 0
	r.stale = !m.haveSnap || m.conn.Quiet(now, m.cfg.PollEvery) // the header's test
	s := m.snap
	for _, c := range s.Categories {
		r.done += c.Done
		r.target += c.Target
		if !r.stale {
			r.recMin += c.RatePerMin
		}
	}
	if !r.stale {
		r.tokS = s.Server.GenThroughput
		r.eta = s.ETASeconds
	}
	r.finished = allFinal(s)
	if s.Spend != nil {
		r.kwh = s.Spend.KWh // a tally: kept as the row's other figures when stale
	}
	r.alerts = alerts(s)
	return r
}

// kwhText is the row's energy cell: "-" when not measured.
func (r fleetRow) kwhText() string {
	if r.kwh == nil {
		return "-"
	}
	return parse.KWhText(*r.kwh)
}

// alerts are a host's troubles in a few words: stalls, the server, the
// disk, errors, the worker gone.
func alerts(s snapshot.Snapshot) []string {
	var out []string
	stalled, errs, over, below := 0, int64(0), 0, 0
	for _, c := range s.Categories {
		if c.Gate != nil && c.Gate.Below {
			below++
		}
		if c.State == snapshot.StateStalled {
			stalled++
		}
		errs += c.Errors
		if len(c.OverCap) > 0 {
			over++
		}
	}
	switch {
	case s.Worker.State == snapshot.WorkerStalled && s.Worker.Reason != "":
		out = append(out, "stalled: "+sanitizeName(s.Worker.Reason)) // the dashboard's and status's words
	case stalled > 0 || s.Worker.State == snapshot.WorkerStalled:
		out = append(out, "stalled")
	}

	switch s.Worker.State {
	case snapshot.WorkerDied:
		out = append(out, "worker died")
	}
	switch s.Server.State {
	case snapshot.ServerDown, snapshot.ServerCrashed, snapshot.ServerUnhealthy, snapshot.ServerHung, snapshot.ServerStopped:
		out = append(out, "server "+string(s.Server.State))
	}
	if d := s.Vitals.Disk; d != nil && d.Low {
		out = append(out, "disk low")
	}
	if c := s.Capture; c != nil && c.Fits != nil && !*c.Fits {
		out = append(out, "next stage won't fit")
	}
	if errs > 0 {
		out = append(out, fmt.Sprintf("%s err", thousands(errs)))
	}
	if over > 0 { // past a token budget or max_samples (parse.OverCaps)
		out = append(out, fmt.Sprintf("%s over cap", thousands(int64(over))))
	}
	if below > 0 { // a pass rate below [gate] min_pass_rate (parse.JudgeGate)
		out = append(out, fmt.Sprintf("%s below pass floor", thousands(int64(below))))
	}
	for _, a := range s.Alerts {
		switch a.Kind {
		case snapshot.WarnRoot:
			out = append(out, "no pipeline root")
		case snapshot.WarnManifest:
			out = append(out, "manifest unreadable")
		}
	}
	return out
}

// etaText is the host's ETA cell: "done", its figure, "?" while work is
// left with no honest figure, "-" when stale or nothing is known.
func (r fleetRow) etaText() string {
	switch {
	case r.finished:
		return "done"
	case r.eta != nil:
		return etaText(r.eta)
	case r.have && !r.stale && r.target > r.done:
		return "?"
	}
	return "-"
}

// fleetTotal is the total row: the fleet's figures, and its ETA, that of
// the host to finish last at its own pace.
type fleetTotal struct {
	done, target int64
	recMin, tokS float64
	kwh          float64 // the hosts' that measured it
	kwhUnknown   bool    // a host with a Snapshot measured none: the sum is a floor
	eta          *float64
	last         string // the host that finishes last
	unknown      int    // hosts with work left and no figure
	unreached    int    // hosts never reached: their work is not known
	up, n        int
	note         string // why the ETA is what it is
}

// etaText is the fleet's ETA: the last host's, "?" while a host with work
// left has no figure, "done" when every host is.
func (t fleetTotal) etaText() string {
	switch {
	case t.unknown > 0 || t.unreached > 0:
		return "?"
	case t.eta != nil:
		return etaText(t.eta)
	case t.target > 0:
		return "done"
	}
	return "-"
}

// kwhText is the fleet's energy: the sum of the hosts that measured it,
// "≥" before it when a host measured none, "-" when none did.
func (t fleetTotal) kwhText() string {
	switch {
	case t.kwh == 0 && t.kwhUnknown:
		return "-"
	case t.kwhUnknown:
		return "≥" + parse.KWhText(t.kwh)
	case t.kwh == 0:
		return "-"
	}
	return parse.KWhText(t.kwh)
}

// liveText is the header's count of the hosts by link: live, stale (once
// reached, no fresh poll) and never reached.
func (t fleetTotal) liveText() string {
	s := fmt.Sprintf("  %d live, %d stale", t.up, t.n-t.up-t.unreached)
	if t.unreached > 0 {
		s += fmt.Sprintf(", %d never reached", t.unreached)
	}
	return s
}

func total(rows []fleetRow) fleetTotal {
	var t fleetTotal
	t.n = len(rows)
	for _, r := range rows {
		t.done += r.done
		t.target += r.target
		t.recMin += r.recMin
		t.tokS += r.tokS
		switch {
		case r.kwh != nil:
			t.kwh += *r.kwh
		case r.have:
			t.kwhUnknown = true
		}
		if !r.stale {
			t.up++
		}
		switch {
		case !r.reached:
			t.unreached++
		case r.finished:
		case r.eta == nil:
			t.unknown++
		case t.eta == nil || *r.eta > *t.eta:
			e := *r.eta
			t.eta, t.last = &e, r.name
		}
	}
	var notes []string
	if t.unreached > 0 {
		notes = append(notes, fmt.Sprintf("%d host(s) never reached", t.unreached))
	}
	switch {
	case t.unknown > 0:
		notes = append(notes, fmt.Sprintf("%d host(s) with work left and no ETA", t.unknown))
	case t.eta != nil:
		notes = append(notes, "last to finish: "+t.last)
	}
	t.note = strings.Join(notes, "; ")
	return t
}

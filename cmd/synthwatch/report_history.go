package main

import (
	"sort"
	"strings"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// sleptHead starts the dashboard's "slept" event (pipeline/sleep.go,
// noteSleep: "laptop slept " + FormatDuration; TestSleepFoldsTheWake pins it).
const sleptHead = "laptop slept "

// historyIncidents adds what only this machine's dashboard saw, from its
// history of the host and root (the file the dashboard keeps): the laptop
// asleep, from its sleep to its wake, and the link down, from a disconnect
// to the next reconnect. The host's digest cannot know them, and they cost
// the job no record (the worker runs on the host): they are the times the
// dashboard watched nothing. It returns how many it added.
func historyIncidents(s *digest.Summary, path string) int {
	events := timeline.Read(5000, path).Recent(5000)
	var add []digest.Incident
	for i, e := range events {
		var in digest.Incident
		switch e.Kind {
		case "slept":
			d, ok := parse.ParseFormattedDuration(strings.Fields(strings.TrimPrefix(e.Text, sleptHead) + " ")[0])
			if !strings.HasPrefix(e.Text, sleptHead) || !ok {
				continue
			}
			woke := e.Time.In(s.Now.Location())
			in = digest.Incident{Time: woke.Add(-d), End: &woke, Kind: digest.KindSlept,
				Text: "this machine slept: the dashboard watched nothing"}
		case "disconnect":
			in = digest.Incident{Time: e.Time.In(s.Now.Location()), Kind: digest.KindLinkDown, Text: "the link to the host was down: " + e.Text}
			for _, o := range events[i+1:] {
				if o.Kind == "reconnect" {
					back := o.Time.In(s.Now.Location())
					in.End = &back
					break
				}
			}
			if in.End == nil {
				in.Text += " (no reconnection in the history: the dashboard closed, or the link is down still)"
			}
		default:
			continue
		}
		end := in.Time
		if in.End != nil {
			end = *in.End
		}
		if end.Before(s.Since) || in.Time.After(s.Now) {
			continue
		}
		in.Text = parse.SanitizeLine([]byte(in.Text), 240)
		add = append(add, in)
	}
	if len(add) == 0 {
		return 0
	}
	s.Incidents = append(s.Incidents, add...)
	sort.SliceStable(s.Incidents, func(i, j int) bool { return s.Incidents[i].Time.Before(s.Incidents[j].Time) })
	return len(add)
}

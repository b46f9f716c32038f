package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// serverLines are one line per server under the host's total, when the
// host has several or a router: a router's replicas indented under it,
// with the router's own verdict of each.
func (m Model) serverLines(w int) []string {
	st := m.st
	var out []string
	for _, sv := range m.snap.Servers {
		indent := "  "
		if sv.Role == snapshot.RoleReplica {
			indent = "    "
		}
		name := sanitizeName(sv.Name)
		var parts []string
		switch sv.Role {
		case snapshot.RoleRouter:
			parts = append(parts, "router "+name, m.stateWord(sv.State))
			parts = append(parts, fmt.Sprintf("%d replicas, %d healthy", sv.Replicas, sv.HealthyReplicas))
			if sv.Source != "" {
				parts = append(parts, fmt.Sprintf("in flight %d", sv.RunningReqs))
			}
			if sv.Metrics != "" && sv.Metrics != "ok" {
				parts = append(parts, st.Dim.Render("metrics "+sv.Metrics))
			}
		default:
			parts = append(parts, name, m.stateWord(sv.State))
			if idle := snapshot.IdleText(sv); idle != "" {
				parts[len(parts)-1] = st.OK.Render(idle)
			} else if sv.Source != "" {
				parts = append(parts, fmt.Sprintf("gen %.0f tok/s", sv.GenThroughput), fmt.Sprintf("running %d", sv.RunningReqs),
					fmt.Sprintf("queued %d", sv.QueueReqs), fmt.Sprintf("KV %.0f%%", 100*sv.TokenUsage))
			}
			if h := sv.RouterHealthy; h != nil {
				verdict := "router: healthy"
				if !*h {
					verdict = st.Bad.Render("router: unhealthy")
				}
				parts = append(parts, verdict)
			}
			if sv.Source != "" {
				parts = append(parts, st.Dim.Render("("+sv.Source+")"))
			}
		}
		if sv.Reason != "" && sv.State != snapshot.ServerReady && sv.State != snapshot.ServerBusy {
			parts = append(parts, st.Dim.Render(parse1(sv.Reason)))
		}
		line := indent + strings.Join(parts, "  ")
		if m.stale() {
			line = st.Stale.Render(ansi.Strip(line))
		}
		out = append(out, fit(line, w))
	}
	return out
}

// stateWord is a server state as the panel shows it.
func (m Model) stateWord(state snapshot.ServerState) string {
	st := m.st
	switch state {
	case snapshot.ServerReady, snapshot.ServerBusy:
		return st.OK.Render(string(state))
	case snapshot.ServerCrashed:
		return st.Bad.Render("CRASHED")
	case snapshot.ServerDown:
		return st.Bad.Render("DOWN")
	case snapshot.ServerUnhealthy, snapshot.ServerHung, snapshot.ServerStopped:
		return st.Bad.Render(string(state))
	}
	return string(state)
}

// probedURL names the URL a server's state is about and why that one.
func probedURL(sv snapshot.Server) string {
	if sv.URL == "" {
		return ""
	}
	return " [" + parse1(sv.URL) + ", " + parse1(sv.URLFrom) + "]"
}

// parse1 keeps a reason from the host on one safe line.
func parse1(s string) string { return sanitizeName(strings.ReplaceAll(s, "\n", " ")) }

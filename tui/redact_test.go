package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// A server URL with a password (a gateway's basic auth) reaches the
// dashboard and the fleet from every field that can hold one: the probed
// URL and why, the server's reason and last crash, a replica's router,
// the warnings, a category's reason, the events, the link's error and the
// log panes. Each screen shows "admin:***@", never the password.
func TestURLPasswordLeavesNoScreen(t *testing.T) {
	const secret = "hunter2pass"
	url := "http://admin:" + secret + "@10.0.0.1:8080"
	hosts := threeHosts()
	for i := range hosts {
		s := &hosts[i].snap
		s.Server.URL, s.Server.URLFrom = url, "flag --server-url"
		s.Server.LastCrash, s.Server.LastCrashAt = "connection to "+url+"/v1 lost", tp(t0)
		s.Servers = []snapshot.Server{
			{Name: "10.0.0.1:8080", Role: "router", URL: url, State: snapshot.ServerReady},
			{Name: "10.0.0.2:8080", Role: "replica", URL: "http://admin:" + secret + "@10.0.0.2:8080", Via: url, State: snapshot.ServerDown, Reason: "GET " + url + "/health refused"},
		}
		s.Warn(snapshot.WarnCategory, "POST "+url+"/v1/chat/completions: 502")
		s.Categories[0].Reason = "the worker waits for " + url + "/health"
		s.Events = append(s.Events, snapshot.Event{Time: t0, Kind: "server_down", Text: "server " + url + " down"})
		hosts[i].worker = append(hosts[i].worker, "2026-01-01 00:00:00 [WARN] retry: Post \""+url+"/v1/chat/completions\": EOF")
		hosts[i].server = append(hosts[i].server, "proxy to "+url+" failed")
	}
	hosts[1].snap.Server.State, hosts[1].snap.Server.Reason = snapshot.ServerDown, "GET "+url+"/metrics refused"
	hosts[1].snap.Worker.Reason = "the worker waits for " + url + "/health" // the fleet's alerts say it
	hosts[2].conn.Error = "proxy " + url + " refused the tunnel"
	fl, _ := newFleet(hosts, 220, 60, Config{})
	screens := map[string]string{"fleet": fscreen(fl)}
	for _, h := range hosts {
		m, _ := newModel(h.fake, 220, 80, Config{})
		screens["dashboard "+h.name] = ansi.Strip(m.View().Content)
		m.lastWorker, m.lastWorkerAt = h.snap.Worker, t0
		screens["quit message "+h.name] = m.quitMessage()
	}
	for what, scr := range screens {
		if strings.Contains(scr, secret) {
			t.Errorf("the %s shows the password:\n%s", what, scr)
		}
	}
	for _, what := range []string{"fleet", "dashboard gpu1", "dashboard gpu2"} {
		if !strings.Contains(screens[what], "admin:***@10.0.0.1:8080") {
			t.Errorf("the %s does not show the URL, redacted:\n%s", what, screens[what])
		}
	}
}

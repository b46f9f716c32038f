package servers

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/statedocs"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func TestServerStateTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		f      serverFacts
		state  snapshot.ServerState
		reason string
	}{
		{"metrics idle", serverFacts{metrics: "ok", phase: "ready"}, snapshot.ServerReady, ""},
		{"metrics busy", serverFacts{metrics: "ok", load: 3}, snapshot.ServerBusy, ""},
		{"metrics with a fault", serverFacts{metrics: "ok", fault: "Health check failed"}, snapshot.ServerUnhealthy, "fault: Health check failed"},
		{"no metrics, health ok", serverFacts{metrics: "no_metrics", health: "ok", load: 2}, snapshot.ServerBusy, ""},
		{"no metrics, health 503 loading", serverFacts{metrics: "no_metrics", health: "http 503", phase: "startup"}, snapshot.ServerStarting, "/health 503"},
		{"no metrics, health 503", serverFacts{metrics: "no_metrics", health: "http 503", phase: "ready"}, snapshot.ServerUnhealthy, "/health 503"},
		{"metrics 500", serverFacts{metrics: "http 500", phase: "ready"}, snapshot.ServerUnhealthy, "/metrics 500"},
		{"timeout", serverFacts{metrics: "timeout", phase: "ready", logSeen: true}, snapshot.ServerUnhealthy, "timed out"},
		{"timeout after a crash", serverFacts{metrics: "timeout", phase: "crash"}, snapshot.ServerCrashed, "crash"},
		{"refused after a crash", serverFacts{metrics: "refused", phase: "crash", logSeen: true, logAge: time.Minute}, snapshot.ServerCrashed, "crash"},
		{"refused while loading", serverFacts{metrics: "refused", phase: "startup", logSeen: true, logGrew: true}, snapshot.ServerStarting, "loading"},
		{"kill -9: refused, worker waiting", serverFacts{metrics: "refused", refused: 1, phase: "ready", logSeen: true, logAge: 3 * time.Second, waiting: true},
			snapshot.ServerDown, "/metrics refused, log quiet 3s, worker waiting for /health"},
		{"refused, log quiet 2m", serverFacts{metrics: "refused", phase: "ready", logSeen: true, logAge: 2 * time.Minute, waiting: true},
			snapshot.ServerDown, "down"[0:0] + "/metrics refused, log quiet 2m, worker waiting for /health"},
		{"refused, no log", serverFacts{metrics: "refused"}, snapshot.ServerDown, "/metrics refused, no server log"},
		{"refused, fresh log, nobody waits: wrong URL?", serverFacts{metrics: "refused", refused: 5, phase: "ready", logSeen: true, logAge: 5 * time.Second, load: 4},
			snapshot.ServerBusy, "state from the log"},
		{"refused, log still growing, worker waiting", serverFacts{metrics: "refused", phase: "ready", logSeen: true, logGrew: true, waiting: true}, snapshot.ServerReady, "state from the log"},
		{"not asked, log ready", serverFacts{phase: "ready", logSeen: true}, snapshot.ServerReady, ""},
		{"not asked, log crash", serverFacts{phase: "crash", logSeen: true}, snapshot.ServerCrashed, "crash"},
		{"not asked, log fault", serverFacts{phase: "ready", fault: "watchdog", logSeen: true}, snapshot.ServerUnhealthy, "fault: watchdog"},
		{"nothing", serverFacts{}, snapshot.ServerUnknown, ""},
	} {
		state, reason := serverStateFor(c.f)
		if state != c.state || !strings.Contains(reason, c.reason) {
			t.Errorf("%s: %s (%q), want %s (%q)", c.name, state, reason, c.state, c.reason)
		}
	}
}

func TestProbeKind(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		nil:         "ok",
		errNoSeries: "no_metrics",
		statusError{"/metrics", 404, "404 Not Found"}: "no_metrics",
		statusError{"/metrics", 503, "503"}:           "http 503",
		errors.New(`Get "http://127.0.0.1:30000/metrics": ssh: rejected: connect failed (Connection refused)`): "refused",
		fmt.Errorf("get: %w", context.DeadlineExceeded):                                                        "timeout",
		errors.New("EOF"): "error",
	} {
		if got := probeKind(err); got != want {
			t.Errorf("%v: %s, want %s", err, got, want)
		}
	}
}

// The server's state table (probeRows, logRows) and docs/SERVER-STATES.md's
// cannot drift: over a grid of witnesses every row is the first to hold
// for some of them (none is dead), and the states the rows give are
// exactly the doc's.
func TestServerRowsGiveTheDocStates(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/SERVER-STATES.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := statedocs.States(string(data), "server", "ServerState")
	first := func(rows []serverRow, f serverFacts) int {
		return slices.IndexFunc(rows, func(r serverRow) bool { return r.when(f) })
	}
	probeHit, logHit := map[int]bool{}, map[int]bool{}
	given := map[string]bool{}
	for f := range serverFactsGrid() {
		i := first(probeRows, f)
		probeHit[i] = true
		if probeRows[i].state == "" {
			j := first(logRows, f)
			logHit[j] = true
		}
		state, _ := serverStateFor(f)
		given[string(state)] = true
	}
	for _, tab := range []struct {
		name string
		rows []serverRow
		hit  map[int]bool
	}{{"probeRows", probeRows, probeHit}, {"logRows", logRows, logHit}} {
		for i, r := range tab.rows {
			if !tab.hit[i] {
				t.Errorf("%s[%d] (%s) is never the first row to hold", tab.name, i, r.state)
			}
		}
	}
	if got := slices.Sorted(maps.Keys(given)); !slices.Equal(got, slices.Sorted(slices.Values(doc))) {
		t.Errorf("the rows give %q, docs/SERVER-STATES.md lists %q", got, doc)
	}
}

// serverFactsGrid: every probe answer and log phase, with and without a
// fault, a hang, load, a log that grew and a waiting worker.
func serverFactsGrid() iter.Seq[serverFacts] {
	return func(yield func(serverFacts) bool) {
		for _, m := range []string{"", "ok", "refused", "timeout", "no_metrics", "http 500"} {
			for _, h := range []string{"", "ok", "refused", "timeout", "http 503"} {
				for _, phase := range []string{"", "startup", "ready", "crash", "stop"} {
					for bits := range 1 << 6 {
						for _, age := range []time.Duration{0, 5 * time.Second, 2 * time.Minute} {
							f := serverFacts{metrics: m, health: h, phase: phase, stop: "SIGTERM received",
								logSeen: bits&1 != 0, logGrew: bits&2 != 0, waiting: bits&4 != 0, logAge: age}
							if bits&8 != 0 {
								f.fault = "Health check failed"
							}
							if bits&16 != 0 {
								f.hang = "watchdog"
							}
							if bits&32 != 0 {
								f.load = 2
							}
							if !yield(f) {
								return
							}
						}
					}
				}
			}
		}
	}
}

package pipeline

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// serverProbe is what asking the server said this poll.
type serverProbe struct {
	metrics, health string // ok | refused | timeout | no_metrics | http NNN | error | "" (not asked)
	err             string
	skipped         bool // /metrics not asked this poll (backed off): the last answer stands
}

// probeKind names how a request to the server ended.
func probeKind(err error) string {
	var se statusError
	var ne net.Error
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errNoSeries):
		return "no_metrics"
	case errors.As(err, &se) && se.code == 404:
		return "no_metrics"
	case errors.As(err, &se):
		return "http " + strconv.Itoa(se.code)
	case strings.Contains(strings.ToLower(err.Error()), "connection refused"):
		return "refused" // local: ECONNREFUSED; over SSH: "connect failed (Connection refused)"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error"
}

// probeServer asks /metrics, backing off only when it is missing (metrics
// not enabled) or hangs; a refusal costs one round trip and is asked every
// poll, since it is the first witness of a dead server. Without /metrics,
// /health says whether the server answers.
func (w *Watcher) probeServer(ctx context.Context, s *srvWatch) (parse.ServerMetrics, serverProbe, error) {
	var pr serverProbe
	last := s.st.probe.metrics
	skip := s.metFails > 3 && (last == "no_metrics" && w.polls%10 != 0 || last == "timeout" && w.polls%3 != 0)
	var met parse.ServerMetrics
	var err error
	if skip {
		pr.metrics, pr.skipped = last, true
		err = errors.New("/metrics not tried this poll")
	} else {
		met, err = w.metrics(ctx, s.spec.URL)
		pr.metrics = probeKind(err)
		if err != nil {
			pr.err = err.Error()
		}
	}
	if pr.metrics == "no_metrics" || strings.HasPrefix(pr.metrics, "http ") {
		resp, herr := w.get(ctx, s.spec.URL, "/health")
		if herr == nil {
			resp.Body.Close()
		}
		pr.health = probeKind(herr)
		if pr.health == "no_metrics" {
			pr.health = "http 404"
		}
	}
	return met, pr, err
}

func (s *srvWatch) foldProbe(pr serverProbe) {
	if pr.skipped {
		pr.err = s.st.probe.err
	}
	switch {
	case pr.skipped:
	case pr.metrics == s.st.probe.metrics && pr.metrics != "ok":
		s.metFails++
	case pr.metrics == "ok":
		s.metFails = 0
	default:
		s.metFails = 1
	}
	if pr.metrics == "refused" {
		s.st.refused++
	} else if !pr.skipped {
		s.st.refused = 0
	}
	s.st.probe = pr
}

// serverFacts are one poll's witnesses of the server, for serverStateFor.
type serverFacts struct {
	metrics, health string        // serverProbe's kinds
	refused         int           // polls in a row /metrics was refused
	phase           string        // the log's lifecycle: "", startup, ready, crash, stop
	fault           string        // a fault logged since the server last made progress
	hang            string        // a hang seen since the server last made progress
	stop            string        // the graceful stop's line (phase stop)
	logSeen         bool          // there is a server log
	logGrew         bool          // it grew since the last poll
	logAge          time.Duration // since it last grew
	waiting         bool          // a live worker waits for /health
	load            int           // running + queued requests (metrics, or fresh log lines)
	crash           string
	url             string
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// serverEvents records down, up and unhealthy transitions.
func (sv *serverSet) serverEvents(s *srvWatch, v snapshot.Server, now time.Time) {
	was := s.was
	s.was = v.State
	label := "server"
	if n := sv.named(s.name); n != "" {
		label = s.role + " " + n
	}
	if was == "" || was == v.State || v.State == snapshot.ServerUnknown {
		return
	}
	switch {
	case v.State == snapshot.ServerDown:
		sv.ev.tl.note(now, "server_down", "", label+" down: "+v.Reason)
	case was == snapshot.ServerDown && v.State != snapshot.ServerCrashed:
		sv.ev.tl.note(now, "server_up", "", label+" up again: "+string(v.State))
	}
	if v.State == snapshot.ServerUnhealthy {
		sv.ev.tl.note(now, "server_unhealthy", "", label+" unhealthy: "+v.Reason)
	}
	if v.State == snapshot.ServerHung && s.st.hang == "" {
		// a hang only the probes saw (the log's own hang lines are events already)
		sv.ev.tl.note(now, "server_hang", "", label+" hung: "+v.Reason)
	}
}

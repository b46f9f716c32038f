package servers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
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
func (sv *Set) serverEvents(s *srvWatch, v snapshot.Server, now time.Time) {
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
		sv.tl.Note(now, "server_down", "", label+" down: "+v.Reason)
	case was == snapshot.ServerDown && v.State != snapshot.ServerCrashed:
		sv.tl.Note(now, "server_up", "", label+" up again: "+string(v.State))
	}
	if v.State == snapshot.ServerUnhealthy {
		sv.tl.Note(now, "server_unhealthy", "", label+" unhealthy: "+v.Reason)
	}
	if v.State == snapshot.ServerHung && s.st.hang == "" {
		// a hang only the probes saw (the log's own hang lines are events already)
		sv.tl.Note(now, "server_hang", "", label+" hung: "+v.Reason)
	}
}

// probeServer asks /metrics, backing off only when it is missing (metrics
// not enabled) or hangs; a refusal costs one round trip and is asked every
// poll, since it is the first witness of a dead server. Without /metrics,
// /health says whether the server answers.
func (sv *Set) probeServer(ctx context.Context, s *srvWatch, polls int) (parse.ServerMetrics, serverProbe, error) {
	var pr serverProbe
	last := s.st.probe.metrics
	skip := s.metFails > 3 && (last == "no_metrics" && polls%10 != 0 || last == "timeout" && polls%3 != 0)
	var met parse.ServerMetrics
	var err error
	if skip {
		pr.metrics, pr.skipped = last, true
		err = errors.New("/metrics not tried this poll")
	} else {
		met, err = sv.web.metrics(ctx, s.spec.URL)
		pr.metrics = probeKind(err)
		if err != nil {
			pr.err = err.Error()
		}
	}
	if pr.metrics == "no_metrics" || strings.HasPrefix(pr.metrics, "http ") {
		resp, herr := sv.web.get(ctx, s.spec.URL, "/health")
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

// serverHTTP asks the servers through the host (an SSH forward): the
// servers' part owns it, as it owns what the answers say.
type serverHTTP struct {
	h    remote.Host
	once sync.Once
	tr   *http.Transport
}

func newServerHTTP(h remote.Host) *serverHTTP { return &serverHTTP{h: h} }

// metrics reads the server's /metrics through the host (an SSH forward).
func (sh *serverHTTP) metrics(ctx context.Context, base string) (parse.ServerMetrics, error) {
	resp, err := sh.get(ctx, base, "/metrics")
	if err != nil {
		return parse.ServerMetrics{}, err
	}
	defer resp.Body.Close()
	m, err := parse.ParseMetrics(io.LimitReader(resp.Body, 8<<20))
	if err == nil && m.Dialect == parse.DialectUnknown {
		err = errNoSeries
	}
	return m, err
}

// errNoSeries: /metrics answered without a server's series.
var errNoSeries = errors.New("/metrics has no sglang or vllm series (start the server with --enable-metrics)")

// statusError is an HTTP answer other than 200.
type statusError struct {
	path   string
	code   int
	status string
}

func (e statusError) Error() string { return e.path + ": " + e.status }

// get asks the server for p through the host, within 3 s. Only a 200 is
// an answer; the caller closes its body.
func (sh *serverHTTP) get(ctx context.Context, base, p string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	tr := sh.transport()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+p, nil)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, statusError{p, resp.StatusCode, resp.Status}
	}
	resp.Body = &cancelBody{resp.Body, cancel}
	return resp, nil
}

// transport carries the server requests of every poll on kept connections
// (one forwarded channel, not one per request) and asks for gzip, which
// the servers' Prometheus endpoint (prometheus_client's make_asgi_app)
// sends when asked: /metrics every poll is then a few hundred bytes. A
// kept connection that died with the link is dialled again by the
// transport itself (a GET is retried on a new one).
func (sh *serverHTTP) transport() *http.Transport {
	sh.once.Do(func() {
		sh.tr = &http.Transport{
			DialContext:         func(ctx context.Context, _, addr string) (net.Conn, error) { return sh.h.DialTCP(ctx, addr) },
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		}
	})
	return sh.tr
}

// body reads base+p through the host, at most max bytes.
func (sh *serverHTTP) body(ctx context.Context, base, p string, max int64) ([]byte, error) {
	resp, err := sh.get(ctx, base, p)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return b, nil
}

type cancelBody struct {
	io.ReadCloser
	done func()
}

func (b *cancelBody) Close() error { err := b.ReadCloser.Close(); b.done(); return err }

package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// simOn starts a sim server on loopback that writes its log to path.
func simOn(t *testing.T, path string) *sim.Server {
	t.Helper()
	mkdir(t, filepath.Dir(path))
	f, err := os.Create(path)
	must(t, err)
	t.Cleanup(func() { f.Close() })
	s := sim.New(sim.Options{Speed: 50, Log: f})
	must(t, s.Start("127.0.0.1:0"))
	t.Cleanup(s.Close)
	return s
}

func sshdHost(t *testing.T) remote.Host {
	t.Helper()
	srv := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	h, err := remote.Dial(context.Background(), remote.Options{
		Target: srv.User + "@" + srv.Addr(), Identities: []string{srv.KeyPath}, Home: t.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + srv.KnownHosts, "StrictHostKeyChecking=yes"},
	})
	must(t, err)
	t.Cleanup(func() { h.Close() })
	return h
}

// pollUntil polls w until cond holds or d passes.
func pollUntil(t *testing.T, w *Watcher, what string, d time.Duration, cond func(snapshot.Snapshot) bool) snapshot.Snapshot {
	t.Helper()
	return pollTicking(t, w, what, d, func() {}, cond)
}

// pollTicking is pollUntil with tick run before each poll (a fake clock's step).
func pollTicking(t *testing.T, w *Watcher, what string, d time.Duration, tick func(), cond func(snapshot.Snapshot) bool) snapshot.Snapshot {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		tick()
		s := w.Poll(context.Background())
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; server %+v servers %+v", what, d, s.Server, s.Servers)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func answering(v snapshot.Server) bool {
	return v.State == snapshot.ServerReady || v.State == snapshot.ServerBusy
}

// Two TP4 servers on one host, listed in pipeline.toml, watched over a real
// sshd: one line each, the total; one goes down and only it is down.
func TestTwoServersOverSSHD(t *testing.T) {
	root := t.TempDir()
	a := simOn(t, filepath.Join(root, "logs", "sglang_inference.log"))
	b := simOn(t, filepath.Join(root, "logs", "sglang_b.log"))
	write(t, filepath.Join(root, "pipeline.toml"), fmt.Sprintf("servers = [%q, {url = %q, log = \"logs/sglang_b.log\"}]\n", a.URL(), b.URL()))
	mkdir(t, filepath.Join(root, "prepared"))
	c := &clock{t: time.Now()}
	w := NewWatcher(sshdHost(t), Options{Host: "sshd", Root: root, ServerURL: closedURL(t), Now: c.now}, nil)
	s := pollUntil(t, w, "both servers answering", 20*time.Second, func(s snapshot.Snapshot) bool {
		return len(s.Servers) == 2 && answering(s.Servers[0]) && answering(s.Servers[1])
	})
	if s.Servers[0].URL != a.URL() || s.Servers[1].URL != b.URL() || s.Server.Role != "total" || !answering(s.Server) {
		t.Fatalf("servers %+v total %+v", s.Servers, s.Server)
	}
	if s.Servers[0].Source != "metrics" || s.Servers[1].Source != "metrics" {
		t.Errorf("sources %q %q: both answer /metrics", s.Servers[0].Source, s.Servers[1].Source)
	}
	lines := strings.Join(w.ServerLog.Lines(), "\n")
	if !strings.Contains(lines, s.Servers[1].Name+" │ ") {
		t.Errorf("the second server's log lines are not tagged with its name:\n%s", lines)
	}
	b.Down(time.Hour)
	// refused with a log that still looks fresh is judged by the log; quiet
	// for quietAfter, it is down: the clock steps past that
	s = pollTicking(t, w, "the second server down", 20*time.Second, func() { c.advance(10 * time.Second) }, func(s snapshot.Snapshot) bool {
		return len(s.Servers) == 2 && s.Servers[1].State == snapshot.ServerDown
	})
	if !answering(s.Servers[0]) || s.Server.State != snapshot.ServerUnhealthy || !strings.Contains(s.Server.Reason, s.Servers[1].Name) {
		t.Fatalf("after one went down: first %+v total %+v", s.Servers[0], s.Server)
	}
	found := false
	for _, e := range s.Events {
		found = found || e.Kind == "server_down" && strings.Contains(e.Text, "server "+s.Servers[1].Name+" down")
	}
	if !found {
		t.Errorf("no server_down event naming %s: %+v", s.Servers[1].Name, s.Events)
	}
}

// routerSetup: two replicas behind the router stand-in, on loopback.
func routerSetup(t *testing.T, root string) (*sim.Router, *sim.Server, *sim.Server) {
	t.Helper()
	a := simOn(t, filepath.Join(root, "logs", "replica_a.log"))
	b := simOn(t, filepath.Join(root, "logs", "replica_b.log"))
	mkdir(t, filepath.Join(root, "logs"))
	f, err := os.Create(filepath.Join(root, "logs", "router.log"))
	must(t, err)
	t.Cleanup(func() { f.Close() })
	r := sim.NewRouter([]string{a.URL(), b.URL()}, 100*time.Millisecond, f)
	must(t, r.Start("127.0.0.1:0", "127.0.0.1:0"))
	t.Cleanup(r.Close)
	mkdir(t, filepath.Join(root, "prepared"))
	return r, a, b
}

// A configured router: its worker list and metrics give each replica's
// health; one replica killed shows down, named by the router too.
func TestRouterReplicaDown(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r, _, b := routerSetup(t, root)
	w := NewWatcher(localHost(), Options{Host: "local", Root: root,
		Servers: []servers.Spec{{URL: r.URL(), Router: true, Metrics: r.MetricsURL(), Log: "logs/router.log"}}}, nil)
	s := pollUntil(t, w, "router and two healthy replicas", 20*time.Second, func(s snapshot.Snapshot) bool {
		return len(s.Servers) == 3 && answering(s.Servers[1]) && answering(s.Servers[2]) && s.Servers[0].HealthyReplicas == 2
	})
	rt := s.Servers[0]
	if rt.Role != snapshot.RoleRouter || rt.Replicas != 2 || rt.HealthyReplicas != 2 || rt.Metrics != "ok" || !answering(rt) {
		t.Fatalf("router %+v", rt)
	}
	for _, rep := range s.Servers[1:] {
		if rep.Role != snapshot.RoleReplica || rep.Via != r.URL() || rep.RouterHealthy == nil || !*rep.RouterHealthy || rep.Source != "metrics" {
			t.Fatalf("replica %+v", rep)
		}
	}
	b.Down(time.Hour)
	r.CheckNow()
	// the replica's own /metrics refuses at once; the router names it at
	// its next health check, which a poll may read before or after
	s = pollUntil(t, w, "replica b down, named by the router", 20*time.Second, func(s snapshot.Snapshot) bool {
		return len(s.Servers) == 3 && s.Servers[2].State == snapshot.ServerDown && s.Servers[2].RouterHealthy != nil && !*s.Servers[2].RouterHealthy
	})
	if rep := s.Servers[2]; rep.RouterHealthy == nil || *rep.RouterHealthy || rep.URL != b.URL() {
		t.Fatalf("replica b: %+v", rep)
	}
	if s.Servers[0].HealthyReplicas != 1 || !answering(s.Servers[1]) || s.Server.State != snapshot.ServerUnhealthy {
		t.Fatalf("router %+v, replica a %+v, total %+v", s.Servers[0], s.Servers[1], s.Server)
	}
	var logged bool
	for _, e := range s.Events {
		logged = logged || e.Kind == "replica_unhealthy" && strings.Contains(e.Text, b.URL())
	}
	if !logged {
		t.Errorf("the router log's health-check failure is not in the timeline: %+v", s.Events)
	}
}

// A router nobody configured: the worker's one URL has no /metrics, its
// /workers says it is the router; the replicas follow.
func TestRouterDetected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	r, _, _ := routerSetup(t, root)
	w := NewWatcher(localHost(), Options{Host: "local", Root: root, ServerURL: r.URL()}, nil)
	s := pollUntil(t, w, "router found", 30*time.Second, func(s snapshot.Snapshot) bool {
		return len(s.Servers) == 3 && s.Servers[0].Role == snapshot.RoleRouter && answering(s.Servers[1]) && answering(s.Servers[2])
	})
	if s.Servers[0].Metrics == "ok" {
		t.Errorf("metrics listener found at the default port %s: %+v", "29000", s.Servers[0])
	}
	var found bool
	for _, e := range s.Events {
		found = found || e.Kind == "router_found"
	}
	if !found {
		t.Errorf("no router_found event: %+v", s.Events)
	}
}

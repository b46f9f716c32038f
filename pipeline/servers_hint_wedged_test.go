package pipeline

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/synthwatch/synthwatch/remote"
)

// wedgedURL is a server that takes connections and never answers (a
// wedged server: a probe of it ends only at its 3 s limit).
func wedgedURL(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return "http://" + l.Addr().String()
}

// A stale hint naming a wedged server stands only until pipeline.toml
// is read: the first poll answers for the manifest's server and rewrites
// the hint, and what the abandoned probe left is no part of the answer.
func TestStaleHintOnAWedgedServer(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	b := closedURL(t)
	write(t, filepath.Join(root, "pipeline.toml"), "server = \""+b+"\"\n")
	hint := filepath.Join(t.TempDir(), "h.servers.json")
	write(t, hint, `{"server":"`+wedgedURL(t)+`"}`)
	w := localWatcher(t, root, newClock(), Options{HintPath: hint})
	s := w.Poll(context.Background())
	if s.Server.URL != b || s.Server.URLFrom != "pipeline.toml server" || len(w.sv.URLs()) != 1 {
		t.Fatalf("server %q from %q (servers %q), want %s from pipeline.toml", s.Server.URL, s.Server.URLFrom, w.sv.URLs(), b)
	}
	if !strings.HasPrefix(s.Server.Reason, "/metrics refused") {
		t.Fatalf("the manifest's server judged %s (%q), want its /metrics refused", s.Server.State, s.Server.Reason)
	}
	if h := ReadServersHint(hint); h == nil || h.Server != b {
		t.Fatalf("the hint was not rewritten: %+v", h)
	}
}

// BenchmarkFirstPollWedgedHint: a status's first poll when the hint (or
// the configured URL) names a wedged server and pipeline.toml another.
func BenchmarkFirstPollWedgedHint(bm *testing.B) {
	root := bm.TempDir()
	put := func(p, s string) { must(bm, os.WriteFile(p, []byte(s), 0o644)) }
	put(filepath.Join(root, "pipeline.toml"), "server = \""+closedURL(bm)+"\"\n")
	hint := filepath.Join(bm.TempDir(), "h.servers.json")
	wedged := `{"server":"` + wedgedURL(bm) + `"}`
	for bm.Loop() {
		put(hint, wedged)
		w := NewWatcher(remote.Local{}, Options{Root: root, Host: "local", ServerURL: closedURL(bm), HintPath: hint, Now: newClock().now}, nil)
		if s := w.Poll(context.Background()); !strings.HasPrefix(s.Server.URL, "http://") {
			bm.Fatal(s.Server.URL)
		}
	}
}

// A pipeline.toml that does not parse lists no servers: those configured
// stand, as without a hint; the hint is not taken for the manifest.
func TestHintIsNotTakenForABrokenManifest(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	write(t, filepath.Join(root, "pipeline.toml"), "server = \n[[[\n")
	hint := filepath.Join(t.TempDir(), "h.servers.json")
	a, c := closedURL(t), closedURL(t)
	write(t, hint, `{"server":"`+a+`"}`)
	w := localWatcher(t, root, newClock(), Options{HintPath: hint, ServerURL: c})
	s := w.Poll(context.Background())
	if w.cnt.ManifestErr() == nil {
		t.Fatal("the manifest parsed")
	}
	if s.Server.URL != c || s.Server.URLFrom == "pipeline.toml server" {
		t.Fatalf("server %q from %q under a broken pipeline.toml, want the configured %s", s.Server.URL, s.Server.URLFrom, c)
	}
}

package servers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/synthwatch/synthwatch/remote"
)

// A first poll probes the default URL beside a batch that reads the
// default log; pipeline.toml then names another URL with that log. The
// new server keeps the log's tail (the handle the batch answered), not a
// tail of its own that the poll would read again by itself. Another log,
// or the same URL, are as before.
func TestSpecsKeepALogUnderANewURL(t *testing.T) {
	const log = "/night/logs/sglang_inference.log"
	sv := New(Config{Host: remote.Local{}, Root: "/night"}, []Spec{{URL: "http://127.0.0.1:30000", Log: log, rooted: true, From: "default"}})
	guess := sv.Tails()[0]
	sv.SetSpecs([]Spec{{URL: "http://127.0.0.1:31000", Log: log, rooted: true, From: "pipeline.toml server"}})
	if got := sv.Tails(); len(got) != 1 || got[0] != guess {
		t.Fatalf("the named server's log is read by a tail of its own: %v, want the guess's", got)
	}
	if sv.list[0].spec.URL != "http://127.0.0.1:31000" || sv.list[0].spec.From != "pipeline.toml server" {
		t.Errorf("the server watched is %+v", sv.list[0].spec)
	}
	sv.SetSpecs([]Spec{{URL: "http://127.0.0.1:31000", Log: "/night/logs/other.log", rooted: true, From: "pipeline.toml server"}})
	if got := sv.Tails(); len(got) != 1 || got[0] == guess || got[0].Path != "/night/logs/other.log" {
		t.Fatalf("another log kept the first one's tail: %v", got)
	}
	// two servers named where one log was read: the first to name it keeps it
	other := sv.Tails()[0]
	sv.SetSpecs([]Spec{
		{URL: "http://127.0.0.1:32000", Log: "/night/logs/other.log", rooted: true, From: "pipeline.toml servers"},
		{URL: "http://127.0.0.1:32001", Log: "/night/logs/other.log", rooted: true, From: "pipeline.toml servers"},
	})
	if got := sv.Tails(); len(got) != 2 || got[0] != other || got[1] == other {
		t.Fatalf("one log's tail under two servers: %v", got)
	}
	// a new URL listed before a kept one with the same log: the kept
	// server keeps its tail, the new one reads the log by a tail of its own
	// (one tail polled twice at once is a race)
	kept := sv.Tails()[1]
	sv.SetSpecs([]Spec{
		{URL: "http://127.0.0.1:33000", Log: "/night/logs/other.log", rooted: true, From: "pipeline.toml servers"},
		{URL: "http://127.0.0.1:32001", Log: "/night/logs/other.log", rooted: true, From: "pipeline.toml servers"},
	})
	if got := sv.Tails(); len(got) != 2 || got[1] != kept || got[0] == kept {
		t.Fatalf("a kept server's tail given to a new one: %v (kept %p)", got, kept)
	}
	// a log a poll has read: its fold stays with its server, a new URL
	// reads it again from the start
	dir := t.TempDir()
	logp := filepath.Join(dir, "server.log")
	if err := os.WriteFile(logp, []byte("[2026-11-29 02:59:00] The server is fired up and ready to roll!\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sv.SetSpecs([]Spec{{URL: "http://127.0.0.1:34000", Log: logp, rooted: true, From: "default"}})
	read := sv.Tails()[0]
	read.Poll(context.Background(), remote.Local{})
	if read.Offset() == 0 {
		t.Fatal("the tail read nothing")
	}
	sv.SetSpecs([]Spec{{URL: "http://127.0.0.1:34001", Log: logp, rooted: true, From: "pipeline.toml server"}})
	if got := sv.Tails(); len(got) != 1 || got[0] == read {
		t.Fatalf("a tail already read went to a new URL without its fold: %v", got)
	}
}

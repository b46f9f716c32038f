package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"golang.org/x/crypto/ssh/knownhosts"
)

// A link that goes quiet (black-holed, with keepalives that give it up
// only after minutes) is shown as quiet by status --follow at its
// cadence: lines marked quiet, each stamped with its own time, figures
// stale (states unknown, no ETA); once the link is back, connected lines
// again. On the trial's commit it printed nothing for 44 s, then a line
// stamped with the poll's start.
func TestFollowShowsAQuietLinkOverSSH(t *testing.T) {
	testgate.E2E(t)
	s := sshdtest.Start(t)
	px, err := faultproxy.Start(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	kh := filepath.Join(t.TempDir(), "kh")
	os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(px.Addr())}, s.HostKey)+"\n"), 0o600)
	root := followRoot(t)
	f := startFollower(t, "--poll", "1s", "-i", s.KeyPath, "-o", "UserKnownHostsFile="+kh, "-o", "StrictHostKeyChecking=yes",
		"-o", "ServerAliveInterval=100", "-o", "ServerAliveCountMax=3", "-o", "ConnectTimeout=5", "--root", root, s.User+"@"+px.Addr())

	var fresh snapshot.Snapshot
	for fresh.Connection.State != snapshot.LinkConnected || len(fresh.Categories) == 0 {
		fresh = f.next(60 * time.Second)
	}
	px.SetMode(faultproxy.BlackHole)
	holeAt := time.Now()
	var quiet []snapshot.Snapshot
	for len(quiet) < 3 {
		s := f.next(60 * time.Second) // bounds a hang: the keepalives would take 300 s
		switch s.Connection.State {
		case snapshot.LinkConnected:
			if len(quiet) > 0 {
				t.Fatalf("a connected line between quiet ones at %s", s.Time)
			}
			continue // answered before the hole
		case snapshot.LinkQuiet:
		default:
			t.Fatalf("the link was given up (%s: %s) before the quiet lines", s.Connection.State, s.Connection.Error)
		}
		if s.Time.Before(holeAt) || s.Connection.LastContact == nil || !s.Connection.LastContact.Before(s.Time) {
			t.Fatalf("a quiet line stamped %s, last contact %v: not its own time (the hole began %s)", s.Time, s.Connection.LastContact, holeAt)
		}
		if c := s.Categories; len(c) != 1 || c[0].State != snapshot.StateUnknown || c[0].ETASeconds != nil || s.ETASeconds != nil || c[0].Done == 0 {
			t.Fatalf("a quiet line's figures are not stale: %+v eta %v", c, s.ETASeconds)
		}
		quiet = append(quiet, s)
	}
	for i := 1; i < len(quiet); i++ {
		if !quiet[i].Time.After(quiet[i-1].Time) || *quiet[i].Connection.LastContact != *quiet[0].Connection.LastContact {
			t.Fatalf("quiet lines %d and %d: %s (last contact %s), %s (last contact %s)", i-1, i, quiet[i-1].Time, quiet[i-1].Connection.LastContact, quiet[i].Time, quiet[i].Connection.LastContact)
		}
	}
	px.SetMode(faultproxy.Forward)
	px.Reset() // the connection the hole held
	for {
		s := f.next(120 * time.Second)
		if s.Connection.State == snapshot.LinkConnected && s.Categories[0].State != snapshot.StateUnknown {
			break
		}
	}
	f.stop(syscall.SIGINT)
}

package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
)

// listening maps the TCP ports in LISTEN state on this machine to their
// socket inodes.
func listening(t *testing.T) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" {
				out[fields[1]] = fields[9]
			}
		}
		fh.Close()
	}
	return out
}

// socketOwner is the command line of the process holding a socket inode
// ("" when none is found).
func socketOwner(inode string) string {
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if l, _ := os.Readlink(fd); l == "socket:["+inode+"]" {
			b, _ := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(fd)), "cmdline"))
			return strings.ReplaceAll(string(b), "\x00", " ")
		}
	}
	return ""
}

// processesWith lists pids whose command line mentions s.
func processesWith(s string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(b), s) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

var catNames = []string{"B1_glaive", "B2_opencodeinstruct", "B3_magicoder", "B4_longwriter", "B5_metamath"}

func TestDemoInTmux(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	tmp := t.TempDir()
	before := listening(t)
	x := startTmux(t, 120, 40, []string{"TMPDIR=" + tmp, "XDG_STATE_HOME=" + t.TempDir()},
		"sh", "-c", `"$@"; echo "exit status $?"; sleep 600`, "sh", bin, "demo", "--speed", "8")
	x.waitFor("connected, with all 5 categories", 20*time.Second, func(s string) bool {
		if !strings.Contains(s, "● connected") {
			return false
		}
		for _, n := range catNames {
			if !strings.Contains(s, n) {
				return false
			}
		}
		return true
	})
	dirs, _ := filepath.Glob(filepath.Join(tmp, "synthwatch-demo-*"))
	if len(dirs) != 1 {
		t.Fatalf("demo dirs %v", dirs)
	}
	x.keys("L")
	x.waitText("Launch the worker on", 30*time.Second)
	x.keys("y")
	rows := regexp.MustCompile(`B2_opencodeinstruct\s+SHORT\s+(\d+)/600`)
	x.waitFor("counts rise", 20*time.Second, func(s string) bool {
		m := rows.FindStringSubmatch(s)
		n, _ := strconv.Atoi(m[1])
		return n > 150 // it had 150 from an earlier run
	})
	x.waitFor("the scripted stall", 40*time.Second, func(s string) bool { return strings.Contains(s, "stalled") })
	start := time.Now()
	x.keys("q")
	x.waitText("exit status 0", 60*time.Second) // a generous deadline: the machine may be loaded
	t.Logf("quit took %s", time.Since(start))
	if left, _ := filepath.Glob(filepath.Join(tmp, "synthwatch-demo-*")); len(left) != 0 {
		t.Errorf("temp dirs left: %v", left)
	}
	if p := processesWith(dirs[0]); len(p) != 0 {
		t.Errorf("processes left behind: %v", p)
	}
	// a port opened since the start is the demo's when a process of the demo
	// holds it (other packages' tests may be listening at the same time)
	for port, inode := range listening(t) {
		if _, ok := before[port]; ok {
			continue
		}
		if owner := socketOwner(inode); strings.Contains(owner, bin) || strings.Contains(owner, dirs[0]) {
			t.Errorf("a port is still listening: %s, held by %q", port, owner)
		}
	}
}

// The README's story, as a newcomer follows it: the server stops answering
// B3, which turns stalled; j/k onto it, R, y; B3 flows again, before the
// scripted server crash (which would unstick it anyway). The demo leaves
// nothing in the state directory and says what q stopped.
func TestDemoRestartUnsticksTheStallInTmux(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	bin := testbin.Path(t)
	tmp, state := t.TempDir(), t.TempDir()
	x := startTmux(t, 140, 45, []string{"TMPDIR=" + tmp, "XDG_STATE_HOME=" + state},
		"sh", "-c", `"$@"; echo "exit status $?"; sleep 600`, "sh", bin, "demo", "--speed", "3")
	x.waitFor("connected, with all 5 categories", 30*time.Second, func(s string) bool {
		if !strings.Contains(s, "● connected") {
			return false
		}
		for _, n := range catNames {
			if !strings.Contains(s, n) {
				return false
			}
		}
		return true
	})
	x.keys("L")
	x.waitText("Launch the worker on", 10*time.Second)
	x.keys("y")
	// the state is a known word: a provenance column may follow it
	b3 := regexp.MustCompile(`B3_magicoder\s+SHORT\s+(\d+)/500\s.*\s(pending|running|stalled|done|skipped|stopped|failed|unknown)(\s|$)`)
	row := func(s string) (int, string) {
		for _, l := range strings.Split(s, "\n") {
			if m := b3.FindStringSubmatch(l); m != nil {
				n, _ := strconv.Atoi(m[1])
				return n, m[2]
			}
		}
		return -1, ""
	}
	crashed := regexp.MustCompile(`server (CRASHED|DOWN)`)
	scr := x.waitFor("B3 stalled", 120*time.Second, func(s string) bool {
		if crashed.MatchString(s) {
			t.Fatalf("the server crashed before B3 stalled:\n%s", s)
		}
		_, st := row(s)
		return st == "stalled"
	})
	atStall, _ := row(scr)
	header := regexp.MustCompile(`worker (running|stalled) pid (\d+)`)
	m := header.FindStringSubmatch(scr)
	if m == nil {
		t.Fatalf("no worker pid in the header:\n%s", scr)
	}
	oldPID := m[2]
	x.keys("k", "k", "k", "k", "k", "j", "j") // B1 is first: two down is B3
	x.keys("R")
	x.waitText(`Restart with "B3_magicoder" first?`, 10*time.Second)
	x.keys("y")
	start := time.Now()
	// the old worker's requests, released, may land during its grace; then
	// the new worker must add its own
	beforeCrash := func(what string, cond func(string) bool) string {
		t.Helper()
		return x.waitFor(what, 120*time.Second, func(s string) bool {
			if crashed.MatchString(s) {
				t.Fatalf("%s: not before the scripted server crash (%s after R, y):\n%s", what, time.Since(start).Round(time.Millisecond), s)
			}
			return cond(s)
		})
	}
	scr = beforeCrash("a new worker", func(s string) bool {
		m := header.FindStringSubmatch(s)
		return m != nil && m[1] == "running" && m[2] != oldPID
	})
	atNew, _ := row(scr)
	newAt := time.Since(start)
	scr = beforeCrash("B3's count rises with the new worker", func(s string) bool {
		n, _ := row(s)
		return n > atNew
	})
	n, st := row(scr)
	t.Logf("B3 %d at the stall; new worker %s after R, y at %d; %d (%s) %s after R, y", atStall, newAt.Round(time.Millisecond), atNew, n, st, time.Since(start).Round(time.Millisecond))
	if st != "running" && st != "done" {
		t.Errorf("B3 is %s after it flowed again:\n%s", st, scr)
	}
	x.keys("q")
	scr = x.waitText("exit status 0", 60*time.Second) // a generous deadline: the machine may be loaded
	if !strings.Contains(scr, "synthwatch demo: stopped the worker, sim and the SSH server") {
		t.Errorf("quit note:\n%s", scr)
	}
	var left []string
	filepath.WalkDir(state, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) != 0 {
		t.Errorf("the demo left files in XDG_STATE_HOME: %v", left)
	}
	if dirs, _ := filepath.Glob(filepath.Join(tmp, "synthwatch-demo-*")); len(dirs) != 0 {
		t.Errorf("temp dirs left: %v", dirs)
	}
}

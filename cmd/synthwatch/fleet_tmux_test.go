package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/faultproxy"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// rowDone is host's done count on the fleet screen (-1: no row or no figure).
func rowDone(scr, host string) int {
	m := regexp.MustCompile(`(?m)^\S*\d+\s+` + regexp.QuoteMeta(host) + `\s.*?([\d,]+)/[\d,]+`).FindStringSubmatch(scr)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return n
}

func rowLine(scr, host string) string {
	return regexp.MustCompile(`(?m)^\S*\d+\s+` + regexp.QuoteMeta(host) + `\s.*$`).FindString(scr)
}

// The fleet as a person uses it: the real binary in tmux, --fleet lab over
// three real sshd with a root and a running worker each (against sim).
// Every host shows; gpu3, black-holed through the fault proxy, goes stale
// while gpu1 and gpu2 keep counting; K on gpu2 kills gpu2's worker only.
func TestFleetInTmuxEndToEnd(t *testing.T) {
	testgate.E2E(t)
	needTmux(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	bin := testbin.Path(t)
	srv := sim.New(sim.Options{Speed: 4})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var px *faultproxy.Proxy
	lab := newFleetLab(t, 3, func(int) string { return nightRoot(t, srv.URL(), 200000) }, func(i int, s *sshdtest.Server) string {
		if i != 2 {
			return s.Addr()
		}
		p, err := faultproxy.Start(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		px = p
		return p.Addr()
	})
	pids := make([]int, 3)
	for i, root := range lab.roots {
		pid, err := actions.Actor{H: remote.Local{}, Root: root, WorkerBin: bin}.Launch(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		pids[i] = pid
		defer syscall.Kill(-pid, syscall.SIGKILL)
	}

	x := startTmux(t, 160, 40, []string{"XDG_STATE_HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + lab.confDir, "SSH_AUTH_SOCK="},
		"sh", "-c", `"$@"; echo "exit status $?"; sleep 600`, "sh", bin, "-F", lab.sshCfg, "--poll", "1s", "--grace", "5s", "--fleet", "lab")
	x.waitFor("every host up and counting", 60*time.Second, func(scr string) bool {
		for i := range 3 {
			if !strings.Contains(rowLine(scr, alias(i)), "● up") || rowDone(scr, alias(i)) <= 0 {
				return false
			}
		}
		return strings.Contains(scr, "3/3 live")
	})

	px.SetMode(faultproxy.BlackHole)
	scr := x.waitFor("gpu3 stale", 60*time.Second, func(scr string) bool { return strings.Contains(rowLine(scr, "gpu3"), "stale") })
	d1, d2 := rowDone(scr, "gpu1"), rowDone(scr, "gpu2")
	x.waitFor("gpu1 and gpu2 keep counting while gpu3 is stale", 60*time.Second, func(scr string) bool {
		return rowDone(scr, "gpu1") > d1 && rowDone(scr, "gpu2") > d2 && strings.Contains(rowLine(scr, "gpu3"), "stale")
	})

	x.keys("j")
	x.keys("K")
	x.waitText(fmt.Sprintf("gpu2: Kill worker pid %d on gpu2?", pids[1]), 20*time.Second)
	x.keys("y")
	x.waitFor("gpu2's worker stopped", 60*time.Second, func(scr string) bool { return strings.Contains(rowLine(scr, "gpu2"), "stopped") })
	deadline := time.Now().Add(30 * time.Second)
	for alive(pids[1]) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if alive(pids[1]) {
		t.Errorf("gpu2's worker (pid %d) still runs after K", pids[1])
	}
	if !alive(pids[0]) || !alive(pids[2]) {
		t.Errorf("K on gpu2 touched another host's worker: gpu1 alive %v, gpu3 alive %v", alive(pids[0]), alive(pids[2]))
	}
	if r := rowLine(x.screen(), "gpu1"); !strings.Contains(r, "running") {
		t.Errorf("gpu1's row after K on gpu2: %q", r)
	}
	x.keys("q")
	x.waitText("exit status 0", 30*time.Second)
}

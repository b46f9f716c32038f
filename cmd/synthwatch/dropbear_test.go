package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
	"github.com/synthwatch/synthwatch/sim"
)

// dropbearRoot is a small job's root: two categories with records and a
// worker log, as status reads them.
func dropbearRoot(t *testing.T) string {
	root := t.TempDir()
	for i, n := range []string{"B1_glaive", "B2_opencodeinstruct"} {
		d := filepath.Join(root, "prepared", n)
		os.MkdirAll(d, 0o755)
		var p, r strings.Builder
		for k := 0; k < 100; k++ {
			fmt.Fprintf(&p, `{"id":"%s-%d","messages":[{"role":"user","content":"q"}]}`+"\n", n, k)
			if k < 40*(i+1) {
				fmt.Fprintf(&r, `{"id":"%s-%d","completion_tokens":7,"content":"a"}`+"\n", n, k)
			}
		}
		os.WriteFile(filepath.Join(d, "prompts.jsonl"), []byte(p.String()), 0o644)
		os.WriteFile(filepath.Join(d, "raw_responses.jsonl"), []byte(r.String()), 0o644)
	}
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte("Processing: B2_opencodeinstruct (SHORT)\n"), 0o644)
	return root
}

// A host whose SSH server is Dropbear is read like any other: status
// --json gives every category's count, and a dashboard-style poll (the
// host agent) works too.
func TestStatusOverDropbear(t *testing.T) {
	s := sshdtest.StartDropbear(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := dropbearRoot(t)
	out, code := execCLI(t, append(append([]string{"status", "--json"}, sshArgs(t, s)...), "--root", root, "--server-url", "http://127.0.0.1:1", s.User+"@"+s.Addr())...)
	var snap struct {
		Categories []struct {
			Name string `json:"name"`
			Done int    `json:"done"`
		} `json:"categories"`
	}
	if err := json.Unmarshal([]byte(out[:strings.LastIndexByte(out, '}')+1]), &snap); err != nil || code != 0 {
		t.Fatalf("code %d, %v:\n%s\ndropbear:\n%s", code, err, out, s.Log())
	}
	if len(snap.Categories) != 2 || snap.Categories[0].Done != 40 || snap.Categories[1].Done != 80 {
		t.Fatalf("categories %+v:\n%s\ndropbear:\n%s", snap.Categories, out, s.Log())
	}
}

// The keys' work over Dropbear with no SFTP server (Debian's dropbear-bin
// has none): deploy copies the binary, launch starts the worker and sees it
// alive, status counts its records, kill stops it, as over OpenSSH.
func TestActionsOverDropbear(t *testing.T) {
	testgate.E2E(t)
	bin := testbin.Path(t)
	s := sshdtest.StartDropbear(t, sshdtest.WithoutSFTP())
	srv := sim.New(sim.Options{Speed: 4})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root := nightRoot(t, srv.URL(), 400)
	defer exec.Command("pkill", "-KILL", "-f", "worker --root "+root).Run()
	target := s.User + "@" + s.Addr()
	dest := filepath.Join(t.TempDir(), "deployed", "synthwatch")
	os.MkdirAll(filepath.Dir(dest), 0o755)
	ssh := sshArgs(t, s)
	cmd := func(args ...string) (string, int) {
		return execCLI(t, append(append(append([]string{args[0]}, ssh...), args[1:]...), target)...)
	}
	if out, code := cmd("deploy", "--worker-bin", dest); code != 0 { // this test binary, over no SFTP
		t.Fatalf("deploy: code %d: %s\ndropbear:\n%s", code, out, s.Log())
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("deployed binary: %v %v", fi, err)
	}
	if out, code := cmd("launch", "--root", root, "--worker-bin", bin); code != 0 {
		t.Fatalf("launch: code %d: %s\ndropbear:\n%s", code, out, s.Log())
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, code := cmd("status", "--root", root)
		if code == 0 && strings.Contains(out, "worker: running") && !strings.Contains(out, "B1_night             SHORT  0 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the worker writing: code %d: %s", code, out)
		}
		time.Sleep(time.Second)
	}
	if out, code := cmd("kill", "--root", root, "--grace", "10s"); code != 0 {
		t.Fatalf("kill: code %d: %s", code, out)
	}
	if out, code := cmd("status", "--root", root); code != 0 || !strings.Contains(out, "stopped (by you)") {
		t.Fatalf("status after kill: code %d: %s", code, out)
	}
}

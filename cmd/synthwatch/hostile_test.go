package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

func tmuxFmt(t *testing.T, session, format string) string {
	out, _ := tmuxCmd("display", "-p", "-t", session, format).Output()
	return strings.TrimSpace(string(out))
}

// localDashboard runs the real binary in tmux on a root here (--local)
// with one category and a worker log, once the category is on screen.
func localDashboard(t *testing.T, w, h int, category, workerLog string) (*tmux, string) {
	needTmux(t)
	bin := testbin.Path(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", category), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", category, "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "logs"), 0o755)
	os.WriteFile(filepath.Join(root, "logs", "inference_all.log"), []byte(workerLog), 0o644)
	x := startTmux(t, w, h, []string{"XDG_STATE_HOME=" + t.TempDir()}, bin, "--local", root, "--poll", "300ms", "--server-url", "http://127.0.0.1:1")
	x.waitText(category, 10*time.Second)
	return x, root
}

// Hostile log content reaches the real dashboard in a real terminal and
// changes nothing: not the title, not the clipboard, not the modes.
func TestHostileLogsInTmux(t *testing.T) {
	testgate.E2E(t)
	tmuxCmd("delete-buffer").Run()
	x, root := localDashboard(t, 120, 40, "B1", "Processing: B1 (SHORT)\n")
	logPath := filepath.Join(root, "logs", "inference_all.log")
	title0 := tmuxFmt(t, x.session, "#{pane_title}")

	f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{
		"\x1b]0;pwned-title\x07title0", "\x1b]2;pwned-title\x1b\\title2",
		"\x1b]52;c;cHduZWQtY2xpcGJvYXJk\x07clipboard", // "pwned-clipboard"
		"\x1b[2J\x1b[Hclear", "\x1b[?1049l\x1b[?1000h\x1b[?1006h\x1b[?25lmodes",
		"unterminated \x1b]0;pwned-title", "unterminated csi \x1b[12;",
		" 10%|#    |\r 50%|###  |\r100%|#####| progress",
		strings.Repeat("\x00", 4096) + "after the NUL padding of a copytruncate",
		"invalid \xff\xfe\xc3 utf-8", "binary \x01\x02\x03\x7f\x9b\x9d junk",
	}
	for _, h := range hostile {
		fmt.Fprintln(f, h)
	}
	x.waitText("binary", 10*time.Second)
	x.keys("/")
	for _, r := range "progress" {
		x.keys(string(r))
	}
	x.keys("Enter")
	scr := x.waitText("100%|#####| progress", 30*time.Second) // \r bars collapse to their last state
	if strings.Contains(scr, " 10%|#") {
		t.Error("a carriage-return progress bar was not collapsed")
	}
	if got := tmuxFmt(t, x.session, "#{pane_title}"); strings.Contains(got, "pwned") || got != title0 {
		t.Errorf("pane title changed: %q -> %q", title0, got)
	}
	if out, _ := tmuxCmd("show-buffer").Output(); strings.Contains(string(out), "pwned") {
		t.Errorf("the clipboard was written: %q", out)
	}
	if m := tmuxFmt(t, x.session, "#{mouse_any_flag}#{mouse_sgr_flag}"); m != "00" {
		t.Errorf("mouse modes switched on: %s", m)
	}
	if c := tmuxFmt(t, x.session, "#{cursor_flag}"); c != "1" && c != "0" {
		t.Errorf("cursor flag %q", c)
	}
	// then a 10 MB line and a flood: memory stays bounded, the parser keeps up
	f.WriteString(strings.Repeat("A", 10<<20) + "\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(f, "%d/20000 (0 err) 1.0 req/s avg_comp=100tok ETA=1m\n", i)
	}
	f.WriteString("the last line\n")
	f.Close()
	x.keys("f")
	x.waitText("the last line", 20*time.Second)
	pid := tmuxFmt(t, x.session, "#{pane_pid}")
	if mb := testbin.RSSMB(pid); mb < 0 || mb > 100 {
		t.Errorf("dashboard RSS %.0f MB after a 10 MB line and 20,000 lines", mb)
	}
	x.keys("q")
}

// Closing the terminal (the laptop's ssh or tmux goes away) ends the
// dashboard on its SIGHUP; it neither lingers nor spins.
func TestClosingTheTerminalEndsTheDashboard(t *testing.T) {
	testgate.E2E(t)
	x, _ := localDashboard(t, 100, 30, "B1_glaive", "")
	pane, err := strconv.Atoi(tmuxFmt(t, x.session, "#{pane_pid}"))
	if err != nil {
		t.Fatal(err)
	}
	procs := append(sshdtest.Descendants(pane), pane)
	if err := tmuxCmd("kill-session", "-t", x.session).Run(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // bounds a hang; a loaded machine may be slow to reap
	for _, pid := range procs {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d still running 30 s after its terminal closed", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

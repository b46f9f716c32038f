package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
)

// The review's hostile names: a right-to-left override that shows
// "evil-bidi-gpj.exe" as "exe.jpg-idib-live" (and reverses the rest of the
// line), and zero-width characters that make two names look alike.
const bidiName, zwName = "\u202eevil-bidi-gpj.exe", "zw\u200b\u200d\u2060j"

// invisibleRoot is a root whose categories and worker log carry them: the
// worker died on the bidi category, which the header then names.
func invisibleRoot(t *testing.T) string {
	r := digesttest.NewRoot(t)
	start := time.Now().Add(-30 * time.Minute)
	for _, c := range []string{bidiName, zwName} {
		r.Add(parse.PreparedDir+"/"+c+"/"+parse.PromptsFile, `{"id":"1"}`)
		r.Add(parse.PreparedDir+"/"+c+"/"+parse.PromptsFile, `{"id":"2"}`)
		r.Start(c, "r1", 999999, start)
		r.Records(c, "r1", start.Add(time.Minute), start.Add(time.Minute))
		r.Add(parse.WorkerLogPath, "Processing: "+c+" (SHORT)")
	}
	r.WorkerJSON(999999, parse.WorkerRunning, bidiName, time.Now().Add(-time.Minute))
	return r.Dir
}

// formatChars lists the format characters (Unicode Cf) in s.
func formatChars(s string) []string {
	var found []string
	for _, r := range s {
		if unicode.Is(unicode.Cf, r) {
			found = append(found, string(r))
		}
	}
	return found
}

// No format character reaches a view: status's text, the report's text and
// HTML, and the dashboard's raw bytes in a real terminal (header, table,
// log pane). The names still show, without them.
func TestFormatCharactersReachNoView(t *testing.T) {
	root := invisibleRoot(t)
	bin := testbin.Path(t)
	for _, args := range [][]string{
		{"status", "--local", root, "--server-url", "http://127.0.0.1:1"},
		{"report", "--local", root},
		{"report", "--local", root, "--html", filepath.Join(t.TempDir(), "r.html")},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if args[len(args)-2] == "--html" {
			b, rerr := os.ReadFile(args[len(args)-1])
			if rerr != nil {
				t.Fatalf("report --html: %v %v: %s", err, rerr, out)
			}
			out = b
		}
		if f := formatChars(string(out)); len(f) > 0 {
			t.Errorf("%s: %+q reached the output:\n%s", args[0:2], f, out)
		}
		if !strings.Contains(string(out), "evil-bidi-gpj.exe") || !strings.Contains(string(out), "zwj") {
			t.Errorf("%s: the names are not shown:\n%s", args, out)
		}
	}

	needTmux(t)
	raw := filepath.Join(t.TempDir(), "pane.raw")
	// the dashboard starts a second late, once every byte it writes is piped
	x := startTmux(t, 140, 40, []string{"XDG_STATE_HOME=" + t.TempDir()}, "sh", "-c", `sleep 1; exec "$@"`, "sh",
		bin, "--local", root, "--poll", "300ms", "--server-url", "http://127.0.0.1:1")
	if out, err := tmuxCmd("pipe-pane", "-t", x.session, "-o", "cat >>"+raw).CombinedOutput(); err != nil {
		t.Fatalf("pipe-pane: %v %s", err, out)
	}
	x.waitText("zwj", 15*time.Second)
	x.waitText("evil-bidi-gpj.exe", 15*time.Second)
	x.keys("q")
	time.Sleep(500 * time.Millisecond)
	b, err := os.ReadFile(raw)
	if err != nil || len(b) == 0 {
		t.Fatalf("no raw bytes piped: %v", err)
	}
	if f := formatChars(string(b)); len(f) > 0 {
		i := strings.Index(string(b), f[0])
		t.Errorf("the dashboard wrote %+q to the terminal: %q", f, b[max(0, i-200):min(len(b), i+100)])
	}
}

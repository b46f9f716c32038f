package pipeline

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// pyLogs writes the old script's worker log and an SGLang server log as
// Python's print does: size bytes of each, or grow lines more of each.
const pyLogs = `
import sys
wlog, slog, size, grow = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def decode(f, i):
    print(f"[2026-12-06 01:{i // 60 % 60:02d}:{i % 60:02d}] Decode batch, #running-req: {16 + i % 9}, #token: {4096 + i % 977}, token usage: 0.0{i % 10}, gen throughput (token/s): {2500 + i % 131}.00, #queue-req: {i % 3}", file=f)
with open(wlog, "a") as w, open(slog, "a") as s:
    if grow:
        for k in range(grow):
            print(f"{9000 + k}/9900 (3 err) 9.{k % 10} req/s avg_comp={200 + k % 97}tok ETA=1m", file=w)
            decode(s, 90000 + k)
        sys.exit()
    c = 0
    while w.tell() < size:
        print(f"Processing: B{c}_cat (SHORT)", file=w)
        print(f"B{c}_cat: 9000 prompts", file=w)
        for k in range(50, 9001, 50):
            print(f"{k}/9000 ({k // 3000} err) {8 + k % 5}.{k % 10} req/s avg_comp={200 + k % 97}tok ETA={(9000 - k) // 500}m", file=w)
        c += 1
    print("[2026-12-06 00:59:00] The server is fired up and ready to roll!", file=s)
    i = 0
    while s.tell() < size // 4:
        decode(s, i)
        if i % 40 == 0:
            print(f"[2026-12-06 01:00:00] Prefill batch, #new-seq: 1, #new-token: {300 + i % 50}, #cached-token: {i % 200}, token usage: 0.01, #running-req: 15, #queue-req: 0", file=s)
        i += 1
`

// The dashboard's first poll through the agent shows each log's last
// 8 KB; the next, with the logs grown between, puts before them what a
// plain first read showed (the history's digest, then the worker log's
// 64 KB and the server log's 32 KB as they are), in the same request:
// each pane then holds the plain read's lines and the new ones, each once.
func TestPanesBackfillAsAPlainRead(t *testing.T) {
	py := testgate.Tool(t, "python3", "the old script's logs")
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	root := t.TempDir()
	wlog, slog := filepath.Join(root, "logs", "inference_all.log"), filepath.Join(root, "logs", "sglang_inference.log")
	mkdir(t, filepath.Join(root, "logs"))
	write(t, filepath.Join(root, "prepared", "B1", parse.PromptsFile), prompts("B1", 10))
	logs := func(size, grow int) {
		if out, err := exec.Command(py, "-c", pyLogs, wlog, slog, strconv.Itoa(size), strconv.Itoa(grow)).CombinedOutput(); err != nil {
			t.Fatalf("python3: %v %s", err, out)
		}
	}
	logs(2<<20, 0)
	// what a plain first read shows: back bytes as they are, the
	// history's digest from hist bytes before them
	plain := func(p, name string, back, hist int) []string {
		b, err := os.ReadFile(p)
		must(t, err)
		str := string(b)
		lineAfter := func(n int) int { return strings.IndexByte(str[len(str)-n-1:], '\n') + len(str) - n }
		text := string(parse.DigestLog(name, []byte(str[lineAfter(back+hist+1):lineAfter(back)]))) + str[lineAfter(back):]
		return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	wantW, wantS := plain(wlog, parse.DigestWorker, 64<<10, 1<<20-64<<10-1), plain(slog, parse.DigestServer, 32<<10, 256<<10-32<<10)

	t.Setenv("SSH_AUTH_SOCK", "")
	p := newProxied(t, s)
	h := p.dial(t, "ServerAliveInterval=3600")
	t.Cleanup(func() { h.Close() })
	p.px.SetDelay(25 * time.Millisecond) // round trips counted as TestPollRoundTrips does
	for end := time.Now().Add(30 * time.Second); h.State().RTT == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no keepalive answered in 30 s")
		}
	}
	w := NewWatcher(h, Options{Host: "panes", Root: root, ServerURL: closedURL(t), WorkerBin: bin}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if snap := w.Poll(ctx); !strings.HasPrefix(snap.Connection.Reader, "go agent") {
		t.Fatalf("read by %q (%v)", snap.Connection.Reader, w.agentErr)
	}
	first := w.WorkerLog.Lines()
	if len(first) == 0 || len(first) >= len(wantW)/4 || !tailOf(wantW, first) {
		t.Fatalf("the first poll's worker pane: %d lines, not the last of the plain read's %d", len(first), len(wantW))
	}
	if sf := w.ServerLog.Lines(); len(sf) == 0 || len(sf) >= len(wantS)/2 || !tailOf(wantS, sf) {
		t.Fatalf("the first poll's server pane: %d lines, not the last of the plain read's %d", len(sf), len(wantS))
	}
	logs(0, 120)
	if _, turns := rttPoll(t, w, p.px); turns != 1 {
		t.Errorf("the backfill's poll took %d round trips, want 1", turns)
	}
	for _, pane := range []struct {
		name       string
		got, plain []string
	}{{"worker", w.WorkerLog.Lines(), wantW}, {"server", w.ServerLog.Lines(), wantS}} {
		if len(pane.got) != len(pane.plain)+120 || !equalLines(pane.got[:len(pane.plain)], pane.plain) {
			t.Fatalf("the %s pane after the backfill: %d lines, want the plain read's %d and 120", pane.name, len(pane.got), len(pane.plain))
		}
		if g := pane.got[len(pane.plain):]; !strings.HasPrefix(g[0], "9000/9900") && !strings.Contains(g[0], "01:00:00] Decode") || strings.Count(strings.Join(pane.got, "\n"), g[len(g)-1]) != 1 {
			t.Fatalf("the %s pane's new lines: %q … %q", pane.name, g[0], g[len(g)-1])
		}
	}
}

func tailOf(all, end []string) bool {
	return len(end) <= len(all) && equalLines(all[len(all)-len(end):], end)
}

func equalLines(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

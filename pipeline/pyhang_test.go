package pipeline

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// pyTimeout is one request of the old script timing out, as Python 3.11
// prints it (urllib's read of a response that never comes).
const pyTimeout = "Traceback (most recent call last):\n" +
	"  File \"/opt/eagle3/run_inference.py\", line 61, in call\n" +
	"    with urllib.request.urlopen(req, timeout=600) as r:\n" +
	"         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n" +
	"  File \"/usr/lib/python3.11/http/client.py\", line 1378, in getresponse\n" +
	"    response.begin()\n" +
	"  File \"/usr/lib/python3.11/socket.py\", line 706, in readinto\n" +
	"    return self._sock.recv_into(b)\n" +
	"           ^^^^^^^^^^^^^^^^^^^^^^^\n" +
	"TimeoutError: timed out\n"

// pyRecords are n records as the old script writes them: json.dumps's
// ", " and ": " separators and a float timestamp, no finished_at.
func pyRecords(cat string, n int, at time.Time) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id": "%s-%05d", "messages": [{"role": "user", "content": "q %d"}], "response": "answer", "usage": {"prompt_tokens": 12, "completion_tokens": 236, "total_tokens": 248}, "timestamp": %.6f}`+"\n",
			cat, i, i, float64(at.UnixNano())/1e9)
	}
	return b.String()
}

// pyNight lays out the old script's night: B1_glaive (400) and
// B2_opencodeinstruct (600) done, the last B2 record at header, then B3's
// banner and header and nothing but time-outs; no worker.json. The files'
// times are set from header; the log's is left to the caller.
func pyNight(t *testing.T, header time.Time) (root, log string) {
	root = t.TempDir()
	cats := []struct {
		name string
		n    int
	}{{"B1_glaive", 400}, {"B2_opencodeinstruct", 600}, {"B3_magicoder", 300}}
	var l strings.Builder
	for i, c := range cats {
		dir := filepath.Join(root, "prepared", c.name)
		write(t, filepath.Join(dir, "prompts.jsonl"), prompts(c.name, c.n))
		raw := filepath.Join(dir, "raw_responses.jsonl")
		fmt.Fprintf(&l, "%s\nProcessing: %s (SHORT)\n%s\nRunning %d requests (concurrency=8, max_tokens=2048)...\n", parse.Separator, c.name, parse.Separator, c.n)
		if i < 2 {
			ended := header.Add(time.Duration(i-1) * 25 * time.Minute)
			write(t, raw, pyRecords(c.name, c.n, ended))
			touch(t, raw, ended)
			for d := 200; d < c.n; d += 200 {
				fmt.Fprintf(&l, "%d/%d (0 err) 1.3 req/s avg_comp=236tok ETA=5.2m\n", d, c.n)
			}
			continue
		}
		write(t, raw, "") // opened for append when the category starts
		touch(t, raw, header)
	}
	log = filepath.Join(root, parse.WorkerLogPath)
	write(t, log, l.String())
	return root, log
}

// A category that hung under the old script is stalled from when it became
// current, whenever the dashboard opens and whenever it first sees the
// writer alive; the time-outs it logs meanwhile move nothing but ERR.
func TestPythonHangStalledFromItsHeader(t *testing.T) {
	t.Parallel()
	for _, opened := range []time.Duration{0, 5 * time.Minute, 15 * time.Minute} {
		t.Run(fmt.Sprintf("opened %s into the hang", opened), func(t *testing.T) {
			c := newClock()
			c.t = time.Now().Truncate(time.Second)
			header := c.now().Add(-opened)
			root, log := pyNight(t, header)
			startIn(t, root, "exec 3>>logs/inference_all.log; while :; do sleep 1; done", "python3", "run_inference.py")
			touch(t, log, header)
			w := localWatcher(t, root, c, Options{StallAfter: 10 * time.Minute})
			fails := 0
			var s snapshot.Snapshot
			deadline := time.Now().Add(30 * time.Second)
			for c.now().Sub(header) < 16*time.Minute {
				if c.now().Sub(header) >= 2*time.Minute && fails < 16 { // time-outs, two a poll, the log's time moving with them
					appendTo(t, log, pyTimeout+pyTimeout)
					fails += 2
					touch(t, log, c.now())
				}
				s = poll(w)
				b3 := catByName(t, s, "B3_magicoder")
				quiet := c.now().Sub(header)
				switch {
				case !snapshot.Alive(s.Worker.State) && time.Now().Before(deadline):
					time.Sleep(100 * time.Millisecond) // the holder's fd shows in /proc a moment after it starts
					continue
				case quiet <= 10*time.Minute && b3.State != snapshot.StateRunning:
					t.Fatalf("%s after the header: B3 %s (%s), worker %+v", quiet, b3.State, b3.Reason, s.Worker)
				case quiet > 10*time.Minute+30*time.Second && b3.State != snapshot.StateStalled:
					t.Fatalf("%s after the header, %d time-outs logged: B3 %s, worker %+v", quiet, fails, b3.State, s.Worker)
				}
				if int(b3.Errors) != fails {
					t.Fatalf("ERR %d with %d tracebacks logged", b3.Errors, fails)
				}
				c.advance(30 * time.Second)
				if opened == 15*time.Minute {
					break // a one-shot status: one poll
				}
			}
			b3 := catByName(t, s, "B3_magicoder")
			want := fmt.Sprintf("no new records for %s", snapshot.FormatDuration(c.now().Add(-30*time.Second).Sub(header)))
			if b3.State != snapshot.StateStalled || !strings.HasPrefix(b3.Reason, want) || s.Worker.State != snapshot.WorkerStalled || s.Worker.Reason != "B3_magicoder: "+b3.Reason {
				t.Fatalf("B3 %s (%q), want stalled (%q…); worker %s (%q)", b3.State, b3.Reason, want, s.Worker.State, s.Worker.Reason)
			}
			if b3.ETASeconds != nil || b3.RatePerMin != 0 {
				t.Fatalf("a stalled row with rate %.1f and ETA %v", b3.RatePerMin, *b3.ETASeconds)
			}
		})
	}
}

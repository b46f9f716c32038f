package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// plainWatcher is a Watcher that never batches: every read is its own
// request, the way a warm poll reads. The differential tests hold the
// batched cold poll to its answers.
func plainWatcher(h remote.Host, o Options) *Watcher {
	w := NewWatcher(h, o, nil)
	w.fb, w.agent = nil, nil
	w.live = liveness.New(liveness.Config{Reads: h, Host: h, Layout: w.layout(), WorkerLog: w.o.WorkerLog, Timeline: w.timeline})
	return w
}

// comparable is a Snapshot's JSON without what two polls a moment apart
// may see differently: the time, the link's figures, the host's vitals
// (load, CPU and RSS move by themselves).
func comparable(t *testing.T, s snapshot.Snapshot) string {
	t.Helper()
	b, err := json.Marshal(s)
	must(t, err)
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	for _, k := range []string{"time", "connection", "vitals"} {
		delete(m, k)
	}
	out, err := json.MarshalIndent(m, "", " ")
	must(t, err)
	return string(out)
}

// unexamined is s without how its records ended and what that forecasts:
// the agent reads them with the tokens, the plain reads' awk does not
// (its records are "not examined").
func unexamined(s snapshot.Snapshot) snapshot.Snapshot {
	s.Capture = nil
	cats := append([]snapshot.Category(nil), s.Categories...)
	for i := range cats {
		cats[i].Outcomes, cats[i].Gate = nil, nil // the gate too: read with the outcomes
		undone(&s, &cats[i])
	}
	s.Categories = cats
	s.Events = withoutGate(s.Events)
	return s
}

// withoutGate is events without gate_below: a judgement of examined records.
func withoutGate(evs []snapshot.Event) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range evs {
		if e.Kind != snapshot.EventGateBelow {
			out = append(out, e)
		}
	}
	return out
}

// untallied is s without what the token tally adds up: the agent sums the
// records its count on the host counted in the same request, so its tally
// can be a poll ahead of the plain reads' (whose host sum comes next poll,
// summing meanwhile: TokensSumming);
// and it examines how they ended, where the plain reads' awk does not.
func untallied(s snapshot.Snapshot) snapshot.Snapshot {
	s.CompletionTokens, s.TokensPartial, s.Capture, s.TokensSumming = 0, false, nil, nil
	cats := append([]snapshot.Category(nil), s.Categories...)
	for i := range cats {
		c := &cats[i]
		c.CompletionTokens, c.TokensFrom, c.Configs, c.Outcomes, c.Gate, c.TokensSumming = nil, "", nil, nil, nil, nil
		undone(&s, c)
		runs := append([]snapshot.RunInfo(nil), c.Runs...)
		for j := range runs {
			runs[j].Records, runs[j].Tokens = nil, nil
		}
		c.Runs = runs
	}
	s.Categories = cats
	s.Events = withoutGate(s.Events)
	return s
}

// undone is c's DONE as the bare line count: it leaves it once every
// line was examined (parse.JudgeDone: blank and bad lines aside), which
// the agent does a poll ahead, and the plain reads' awk never.
func undone(s *snapshot.Snapshot, c *snapshot.Category) {
	c.Done, c.Progress = c.Lines, 0 // both sides alike, whichever has the note
	if w := recordsNote(c.Warnings); w != "" {
		c.Warnings = slices.DeleteFunc(slices.Clone(c.Warnings), func(x string) bool { return x == w })
		s.Warnings = slices.DeleteFunc(slices.Clone(s.Warnings), func(x string) bool { return x == w })
	}
}

// recordsNote is the warning parse.JudgeDone gives when DONE is the
// records of a file whose every line was examined ("" when none).
func recordsNote(ws []string) string {
	for _, w := range ws {
		if strings.Contains(w, " records (") && strings.HasSuffix(w, " blank or bad)") {
			return w
		}
	}
	return ""
}

// diffRoots are roots as other tools leave them, each with the steps that
// change it between polls.
var diffRoots = []struct {
	name  string
	setup func(t *testing.T, root string)
	steps []func(t *testing.T, root string)
}{
	{"running job", func(t *testing.T, root string) { fillRunningRoot(t, root) }, []func(*testing.T, string){
		func(t *testing.T, root string) {
			appendTo(t, filepath.Join(root, "prepared", "B2_opencodeinstruct", parse.RawFile), records("B2_opencodeinstruct", 2500, 30))
			appendTo(t, filepath.Join(root, "logs", "inference_all.log"), "2480/6000 (1 err) 9.8 req/s avg_comp=248tok ETA=6m\n")
		},
		func(t *testing.T, root string) { // the server log cut, the worker log replaced
			must(t, os.WriteFile(filepath.Join(root, "logs", "sglang_inference.log"), []byte("[2026-12-01 09:10:00] The server is fired up and ready to roll!\n"), 0o644))
			tmp := filepath.Join(root, "logs", "new.log")
			must(t, os.WriteFile(tmp, []byte("Processing: B3_magicoder (SHORT)\n"), 0o644))
			must(t, os.Rename(tmp, filepath.Join(root, "logs", "inference_all.log")))
		},
	}},
	{"python script's root", fillPythonRoot, []func(*testing.T, string){
		func(t *testing.T, root string) {
			appendTo(t, filepath.Join(root, "prepared", "B1 glaive's", parse.RawFile), "{\"id\": \"B1-9\", \"completion_tokens\": 12}\r\n{\"id\": \"B1-1")
		},
		func(t *testing.T, root string) { // the torn tail repaired, a new category
			f := filepath.Join(root, "prepared", "B1 glaive's", parse.RawFile)
			b, err := os.ReadFile(f)
			must(t, err)
			must(t, os.WriteFile(f, b[:bytes.LastIndexByte(b, '\n')+1], 0o644))
			write(t, filepath.Join(root, "prepared", "B6_new", parse.PromptsFile), prompts("B6_new", 3))
		},
	}},
	{"torn and big", fillTornRoot, []func(*testing.T, string){
		func(t *testing.T, root string) {
			appendTo(t, filepath.Join(root, "prepared", "B1", parse.RawFile), "\n"+records("B1", 5000, 700))
		},
	}},
	{"empty root", func(t *testing.T, root string) {}, []func(*testing.T, string){
		func(t *testing.T, root string) {
			write(t, filepath.Join(root, "prepared", "B1", parse.PromptsFile), prompts("B1", 5))
		},
	}},
}

// fillRunningRoot is coldRoot's layout without its server: a live worker
// named by worker.json, both logs, big and small files.
func fillRunningRoot(t *testing.T, root string) {
	for n, c := range map[string][2]int{"B1_glaive": {400, 400}, "B2_opencodeinstruct": {6000, 2500}, "B3_magicoder": {500, 0}} {
		write(t, filepath.Join(root, "prepared", n, parse.PromptsFile), prompts(n, c[0]))
		if c[1] > 0 {
			write(t, filepath.Join(root, "prepared", n, parse.RawFile), records(n, 0, c[1]))
			write(t, filepath.Join(root, "prepared", n, parse.RunsFile), `{"run":"r","started_at":"2026-12-01T01:00:00Z","pid":1}`+"\n")
		}
	}
	write(t, filepath.Join(root, "prepared", "B2_opencodeinstruct", parse.ErrorsFile), `{"id":"B2_opencodeinstruct-9","error":"timeout"}`+"\n")
	write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B2_opencodeinstruct (SHORT)\n"+strings.Repeat("2450/6000 (1 err) 9.8 req/s avg_comp=248tok ETA=6m\n", 30000))
	write(t, filepath.Join(root, "logs", "sglang_inference.log"), strings.Repeat("[2026-12-01 09:00:00] Decode batch, #running-req: 16, #token: 4096, token usage: 0.02, gen throughput (token/s): 2560.00, #queue-req: 0\n", 100))
	pid := fakeWorker(t, root)
	writeWorkerJSON(t, root, parse.WorkerState{PID: pid, State: parse.WorkerRunning, Category: "B2_opencodeinstruct", UpdatedAt: time.Now()})
}

// fillPythonRoot is what the Python script leaves: no manifest, no
// worker.json, json.dumps records with CRLF and a BOM, names with spaces
// and quotes, and a writer only the process table knows.
func fillPythonRoot(t *testing.T, root string) {
	dir := filepath.Join(root, "prepared", "B1 glaive's")
	write(t, filepath.Join(dir, parse.PromptsFile), "\ufeff{\"id\": \"B1-0\", \"messages\": []}\r\n{\"id\": \"B1-1\", \"messages\": []}\r\n")
	write(t, filepath.Join(dir, parse.RawFile), "\ufeff{\"id\": \"B1-0\", \"completion_tokens\": 7}\r\n")
	write(t, filepath.Join(root, "logs", "inference_all.log"), "Processing: B1 glaive's (SHORT)\n1/2 (0 err) 0.1 req/s avg_comp=7tok ETA=10s\n")
	cmd := exec.Command("sh", "-c", `exec 3>>"$1"; while :; do sleep 1; done`, "python3", filepath.Join(root, "logs", "inference_all.log"))
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// fillTornRoot has a big file (counted on the host) whose last line is
// torn and longer than the bytes read with the count, and a NUL tail.
func fillTornRoot(t *testing.T, root string) {
	write(t, filepath.Join(root, "prepared", "B1", parse.RawFile), records("B1", 0, 3000)+`{"id":"B1-torn","content":"`+strings.Repeat("x", 9000))
	write(t, filepath.Join(root, "prepared", "B2", parse.RawFile), records("B2", 0, 10)+strings.Repeat("\x00", 300))
	write(t, filepath.Join(root, "prepared", "B2", parse.PromptsFile), prompts("B2", 20))
}

// TestColdBatchMatchesPlainReads: on each root, a watcher whose polls are
// batched and one that reads request by request give the same Snapshots,
// poll after poll, through changes and through a reconnect (whose poll is
// cold again). On the running job's root the batch foresees every
// question. Batched three ways: the fallback (no synthwatch on the host:
// every poll one exec of fallback.sh), the deployed binary's agent, and
// a host that cannot run an agent (the fallback cold, then file by file).
func TestColdBatchMatchesPlainReads(t *testing.T) {
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, via := range []string{"fallback", "binary agent", "one-shot batch"} {
		t.Run(via, func(t *testing.T) {
			if via != "fallback" {
				testgate.E2E(t) // the quick suite tries the agent every host can run
			}
			coldDiff(t, p, via)
		})
	}
}

func coldDiff(t *testing.T, p *proxied, via string) {
	bin := filepath.Join(t.TempDir(), "absent")
	if via == "binary agent" {
		bin = testbin.Path(t)
	}
	for _, r := range diffRoots {
		t.Run(r.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root with space")
			mkdir(t, root)
			r.setup(t, root)
			hb, hp := p.dial(t), p.dial(t)
			t.Cleanup(func() { hb.Close(); hp.Close() })
			c := newClock()
			o := Options{Host: "diff", Root: root, ServerURL: closedURL(t), Now: c.now, WorkerBin: bin}
			wb, wp := NewWatcher(hb, o, nil), plainWatcher(hp, o)
			if via == "one-shot batch" {
				wb.agent = nil
			}
			check := func(step string) snapshot.Snapshot {
				t.Helper()
				plain := wp.Poll(context.Background())
				sp := comparable(t, plain)
				snap := wb.Poll(context.Background())
				sb := comparable(t, snap)
				switch {
				case sp == sb:
				case comparable(t, unexamined(plain)) == comparable(t, unexamined(snap)):
					t.Logf("%s: the agent examined how the records ended; the plain reads' awk did not", step)
				case plain.TokensPartial && !snap.TokensPartial && comparable(t, untallied(plain)) == comparable(t, untallied(snap)):
					t.Logf("%s: the agent's token tally is complete a poll before the plain one's", step)
				default:
					t.Fatalf("%s: the batched poll differs from the plain one (agent error %q)\nbatched: %s\nplain: %s", step, wb.agentErr, sb, sp)
				}
				c.advance(2 * time.Second)
				return snap
			}
			if snap := check("cold"); (r.name == "running job" || r.name == "python script's root") && (snap.Worker.State != snapshot.WorkerRunning || len(snap.Categories) == 0) {
				t.Fatalf("the cold snapshot saw no running worker: %+v, %d categories", snap.Worker, len(snap.Categories))
			}
			hits, misses, err := wb.ColdStats()
			if err != nil || hits == 0 {
				t.Fatalf("the cold poll was not batched: %d hits, %v", hits, err)
			}
			if want := map[string]string{"fallback": "fallback", "binary agent": "go "}[via]; want != "" && !strings.HasPrefix(wb.agent.Kind(), want) {
				t.Fatalf("the agent that answered: %q, want %q", wb.agent.Kind(), want)
			}
			if r.name == "running job" && misses > 0 {
				t.Errorf("%d reads not in the batch: %v", misses, wb.coldAsks.Missed())
			}
			t.Logf("cold poll: %d reads from the batch, %d not in it %v", hits, misses, wb.coldAsks.Missed())
			for i, step := range r.steps {
				step(t, root)
				check("step " + string(rune('1'+i)))
			}
			sb, sp := hb.State().Sessions, hp.State().Sessions
			p.px.Reset() // both links drop: the next polls are cold again
			waitSession(t, hb, sb)
			waitSession(t, hp, sp)
			was := wb.coldAsks
			check("after the reconnect")
			if hits, _, _ := wb.ColdStats(); wb.coldAsks == was || hits == 0 {
				t.Error("the poll after a reconnect was not batched")
			}
			check("warm again")
		})
	}
}

// waitSession waits for a session of h after its session was.
func waitSession(t *testing.T, h *remote.SSH, was int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for h.State().Phase != remote.Connected || h.State().Sessions == was {
		if time.Now().After(deadline) {
			t.Fatalf("no new session within a minute: %+v", h.State())
		}
		select {
		case <-h.Changed():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

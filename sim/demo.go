package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// DemoOptions shape `synthwatch demo`.
type DemoOptions struct {
	Dir   string  // use and keep this directory; "" makes a temp one, removed on Close
	Speed float64 // 1: the pipeline takes about five minutes
	Calm  bool    // no scripted stall and crash
}

// Demo is a whole pipeline on this machine: a root laid out like the real
// one, sim serving it, and an SSH server to reach it. Only the GPU is fake.
type Demo struct {
	Dir   string
	Root  string
	SSH   *SSHServer
	Sim   *Server
	Speed float64
	keep  bool
	log   *os.File
	stop  chan struct{}
	wg    sync.WaitGroup
	once  sync.Once
	// stories tell what the script did, for --no-tui (StorySince).
	mu      sync.Mutex
	stories []string
}

type demoCat struct {
	name, class string
	n, done     int
}

var demoCats = []demoCat{
	{"B1_glaive", "SHORT", 400, 400},           // already complete: the skip path
	{"B2_opencodeinstruct", "SHORT", 600, 150}, // partial: the resume path
	{"B3_magicoder", "SHORT", 500, 0},
	{"B4_longwriter", "LONG", 48, 0},
	{"B5_metamath", "SHORT", 400, 0},
}

// StartDemo lays out the root and starts sim and the SSH server.
func StartDemo(o DemoOptions) (*Demo, error) {
	if o.Speed <= 0 {
		o.Speed = 1
	}
	d := &Demo{Dir: o.Dir, keep: o.Dir != "", Speed: o.Speed, stop: make(chan struct{})}
	if d.Dir == "" {
		dir, err := os.MkdirTemp("", "synthwatch-demo-")
		if err != nil {
			return nil, err
		}
		d.Dir = dir
	}
	d.Root = filepath.Join(d.Dir, "root")
	for _, p := range []string{filepath.Dir(d.path(parse.ServerLogPath)), filepath.Join(d.Dir, "ssh"), filepath.Join(d.Dir, "home")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	lf, err := os.OpenFile(d.path(parse.ServerLogPath), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	d.log = lf
	d.Sim = New(Options{Speed: 2 * o.Speed, TokPerSec: 80, Capacity: 64, Log: lf, LogInterval: 4 * time.Second})
	if err := d.Sim.Start("127.0.0.1:0"); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.layout(); err != nil {
		d.Close()
		return nil, err
	}
	if d.SSH, err = NewSSHServer(filepath.Join(d.Dir, "ssh")); err == nil {
		err = d.SSH.Start()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	if !o.Calm {
		d.wg.Add(1)
		go d.script()
	}
	return d, nil
}

// StallAfter is the dashboard's stall threshold for the demo's pace.
func (d *Demo) StallAfter() time.Duration {
	return max(3*time.Second, time.Duration(float64(40*time.Second)/d.Speed)) // above one LONG request
}

func (d *Demo) layout() error {
	var m strings.Builder
	fmt.Fprintf(&m, "# synthwatch demo pipeline\nserver = %q\napi = \"chat\"\nmodel = \"/shared/kimi-k2.5-int4\"\n\n", d.Sim.URL())
	m.WriteString("[classes.SHORT]\nconcurrency = 16\nmax_tokens = 10240\nsampling = { temperature = 0.6, top_p = 0.95 }\n\n")
	m.WriteString("[classes.LONG]\nconcurrency = 16\nmax_tokens = 32768\nsampling = { temperature = 1.0 }\n")
	for _, c := range demoCats {
		fmt.Fprintf(&m, "\n[[categories]]\nname = %q\nclass = %q\n", c.name, c.class)
		dir := filepath.Join(d.path(parse.PreparedDir), c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var p, r strings.Builder
		for i := 0; i < c.n; i++ {
			id := fmt.Sprintf("%s-%05d", strings.SplitN(c.name, "_", 2)[0], i)
			msg, _ := json.Marshal([]map[string]string{{"role": "user", "content": fmt.Sprintf("Demo question %d of %s", i, c.name)}})
			fmt.Fprintf(&p, `{"id":%q,"messages":%s}`+"\n", id, msg)
			if i < c.done {
				fmt.Fprintf(&r, `{"id":%q,"category":%q,"run":"seed","prompt_tokens":24,"completion_tokens":%d,"finish_reason":"stop","latency_s":3.1,"finished_at":"2026-11-28T22:00:00Z","content":"(an earlier run)"}`+"\n", id, c.name, 200+i%90)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, parse.PromptsFile), []byte(p.String()), 0o644); err != nil {
			return err
		}
		if c.done > 0 {
			if err := os.WriteFile(filepath.Join(dir, parse.RawFile), []byte(r.String()), 0o644); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(d.path(parse.ManifestPath), []byte(m.String()), 0o644)
}

func (d *Demo) sleep(dd time.Duration) bool {
	select {
	case <-time.After(time.Duration(float64(dd) / d.Speed)):
		return true
	case <-d.stop:
		return false
	}
}

func (d *Demo) say(s string) {
	d.mu.Lock()
	d.stories = append(d.stories, s)
	d.mu.Unlock()
}

// StorySince is what the script did after its first n steps, and the
// number of steps so far.
func (d *Demo) StorySince(n int) ([]string, int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n = min(max(n, 0), len(d.stories))
	return append([]string(nil), d.stories[n:]...), len(d.stories)
}

// path is rel, a slash path of the host layout (parse), under the demo's root.
func (d *Demo) path(rel string) string { return filepath.Join(d.Root, filepath.FromSlash(rel)) }

// worker reads run/worker.json: the pid (0 when no worker runs: none, or
// it ended, or its process is gone), its category and its state.
func (d *Demo) worker() (pid int, cat, state string) {
	data, err := os.ReadFile(d.path(parse.WorkerStatePath))
	if err != nil {
		return 0, "", ""
	}
	st, err := parse.ParseWorkerState(data)
	if err != nil || st.State == parse.WorkerDone || st.State == parse.WorkerStopped || st.State == parse.WorkerFailed {
		return 0, "", st.State
	}
	if syscall.Kill(st.PID, 0) != nil {
		return 0, "", st.State
	}
	return st.PID, st.Category, st.State
}

// StallCategory is the category the script stalls.
const StallCategory = "B3_magicoder"

// script: once a worker runs, the server stops answering its category (a
// stall the user can fix with R); later the server crashes, stays down for
// 20 s, and comes back.
func (d *Demo) script() {
	defer d.wg.Done()
	if !d.waitWorker() || !d.sleep(45*time.Second) {
		return
	}
	// B3 has the most work after the resumed category, so the stall always
	// lands on live work, whichever category is running at this moment
	cat := StallCategory
	{
		if !d.waitWorker() { // the user may have stopped it meanwhile
			return
		}
		pid, _, _ := d.worker()
		d.Sim.SetFaults(Faults{StallMatch: "of " + cat})
		d.say("the server stopped answering " + cat + ": it will stall until the worker is restarted")
		deadline := time.Now().Add(time.Duration(float64(3*time.Minute) / d.Speed))
		for time.Now().Before(deadline) {
			// 200 ms, whatever the speed: the new worker's first requests
			// must not wait for this loop (they are released anyway)
			select {
			case <-d.stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			// the kill is seen at once: the worker says "stopping" on
			// SIGTERM, then ends, then a new one starts
			if p, _, st := d.worker(); p != pid || st == "stopping" {
				break
			}
		}
		d.Sim.SetFaults(Faults{}) // the requests it held are answered now
		d.say(cat + " is answered again")
	}
	if !d.sleep(40 * time.Second) {
		return
	}
	d.say("the server crashed; it comes back in 20 s and the worker waits")
	d.Sim.Crash(time.Duration(float64(20*time.Second) / d.Speed))
	if d.sleep(25 * time.Second) {
		d.say("the server is back")
	}
}

// waitWorker waits until a worker runs; false if the demo ends first.
func (d *Demo) waitWorker() bool {
	for {
		if p, _, _ := d.worker(); p != 0 {
			return true
		}
		select {
		case <-d.stop:
			return false
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// StopWorker stops the demo's worker (its process group: SIGTERM, SIGKILL
// after 2 s) and reports whether one was running: false when it had
// already finished or never started.
func (d *Demo) StopWorker() bool {
	if d.Root == "" {
		return false
	}
	data, err := os.ReadFile(d.path(parse.WorkerStatePath))
	if err != nil {
		return false
	}
	st, err := parse.ParseWorkerState(data)
	if err != nil || st.PID <= 0 || !isDemoWorker(st.PID, d.Root) {
		return false
	}
	_ = syscall.Kill(-st.PID, syscall.SIGTERM)
	for i := 0; i < 20 && syscall.Kill(st.PID, 0) == nil; i++ { // 2 s, then SIGKILL: a demo, not a night of data
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(-st.PID, syscall.SIGKILL)
	return true
}

// Close stops the worker (its process group), the script, sim and the SSH
// server, and removes the temp directory unless it was given with --keep.
func (d *Demo) Close() {
	d.once.Do(func() {
		close(d.stop)
		if d.SSH != nil {
			d.SSH.Close() // first: no launch can come in after the worker is stopped
		}
		d.StopWorker()
		d.wg.Wait()
		if d.Sim != nil {
			d.Sim.Close()
		}
		if d.log != nil {
			d.log.Close()
		}
		if !d.keep {
			os.RemoveAll(d.Dir)
		}
	})
}

func isDemoWorker(pid int, root string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.Contains(string(b), "worker\x00--root\x00"+root)
}

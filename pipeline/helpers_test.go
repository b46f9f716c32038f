package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// clock is a settable fake time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)} }
func mkdir(t testing.TB, p string)       { t.Helper(); must(t, os.MkdirAll(p, 0o755)) }
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
func write(t *testing.T, p, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	must(t, os.WriteFile(p, []byte(s), 0o644))
}
func appendTo(t testing.TB, p, s string) {
	t.Helper()
	mkdir(t, filepath.Dir(p))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	must(t, err)
	defer f.Close()
	_, err = f.WriteString(s)
	must(t, err)
}

// records makes n worker records with ids from..from+n-1.
func records(cat string, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"id":"%s-%d","category":"%s","run":"r","prompt_tokens":10,"completion_tokens":200,"finish_reason":"stop"}`+"\n", cat, i, cat)
	}
	return b.String()
}

func prompts(cat string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"id":"%s-%d","messages":[{"role":"user","content":"question %d of %s"}]}`+"\n", cat, i, i, cat)
	}
	return b.String()
}

// fakeWorker is a live process whose cmdline reads "... worker --root ROOT",
// as the pid check expects of a real worker.
func fakeWorker(t testing.TB, root string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do sleep 1; done", "synthwatch", "worker", "--root", root)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

func writeWorkerJSON(t *testing.T, root string, st parse.WorkerState) {
	t.Helper()
	st.Schema = 1
	data, err := json.Marshal(st)
	must(t, err)
	write(t, filepath.Join(root, "run", "worker.json"), string(data))
}

// closedURL is a server URL where nothing listens, so the watcher falls
// back to the server log.
func closedURL(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func localWatcher(t *testing.T, root string, c *clock, o Options) *Watcher {
	o.Root, o.Host, o.Now = root, "local", c.now
	if o.ServerURL == "" {
		o.ServerURL = closedURL(t)
	}
	return NewWatcher(remote.Local{}, o, nil)
}

func catByName(t *testing.T, s snapshot.Snapshot, name string) snapshot.Category {
	t.Helper()
	for _, c := range s.Categories {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no category %q in %+v", name, s.Categories)
	return snapshot.Category{}
}

func poll(w *Watcher) snapshot.Snapshot { return w.Poll(context.Background()) }

func localHost() remote.Host { return remote.Local{} }

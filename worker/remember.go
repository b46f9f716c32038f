package worker

import (
	"encoding/json"
	"math"
	"os"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The adaptive window remembers, on the host beside the run's state
// (run/windows.json), the last good window for each server URL and class,
// so a category, a restart or a resume starts there instead of at 8. It is
// keyed on the server's description too: a server restarted with another
// configuration (its server_info: the model, the parallelism, the KV pool
// to two figures, max_running_requests, chunked prefill…) starts fresh.

// maxRemembered bounds the file: the newest entries are kept.
const maxRemembered = 64

type rememberedWindow struct {
	Server string    `json:"server"` // the URL, its password redacted: the file is state, and state keeps no secret
	Class  string    `json:"class"`
	Config string    `json:"config"` // windowKey of the server's description
	Window int       `json:"window"`
	At     time.Time `json:"at"`
}

type windowsFile struct {
	Schema  int                `json:"schema"`
	Windows []rememberedWindow `json:"windows"`
}

// windowKey hashes what the server said of itself, its KV pool rounded to
// two figures (it moves with the free GPU memory at each start); "" when
// it said nothing.
func windowKey(snap ServerSnapshot) string {
	if len(snap.Info) == 0 {
		return ""
	}
	m := make(map[string]any, len(snap.Info))
	for k, v := range snap.Info {
		m[k] = v
	}
	delete(m, "kv_cache_dtype_log_error")
	if f, ok := m["max_total_num_tokens"].(float64); ok && f > 0 {
		p := math.Pow(10, math.Floor(math.Log10(f))-1)
		m["max_total_num_tokens"] = math.Round(f/p) * p
	}
	return hashInfo(m)
}

func (w *Worker) windowsPath() string { return underRoot(w.cfg.Root, parse.WindowsPath) }

// windowServer is the server as windows.json names it: its URL with any
// password redacted (parse.Redact), as every state file keeps it.
func (w *Worker) windowServer() string { return parse.Redact(w.cfg.Server) }

func (w *Worker) readWindows() windowsFile {
	var f windowsFile
	data, err := os.ReadFile(w.windowsPath())
	if err != nil {
		return f
	}
	if json.Unmarshal(data, &f) != nil {
		w.logf("WARNING: %s is not readable JSON: the adaptive window starts afresh", parse.WindowsPath)
		return windowsFile{}
	}
	return f
}

// rememberedWindow is the last good window for this server, class and
// configuration, and when it was kept.
func (w *Worker) rememberedWindow(class, config string) (rememberedWindow, bool) {
	for _, e := range w.readWindows().Windows {
		if e.Server == w.windowServer() && e.Class == class && e.Config == config && e.Window > 0 {
			return e, true
		}
	}
	return rememberedWindow{}, false
}

// rememberWindow keeps n as the last good window for the server and class
// (the lock is held: one writer).
func (w *Worker) rememberWindow(class, config string, n int) {
	if n <= 0 || w.lock.Held() != nil {
		return
	}
	f := w.readWindows()
	keep := []rememberedWindow{{Server: w.windowServer(), Class: class, Config: config, Window: n, At: time.Now().UTC()}}
	for _, e := range f.Windows {
		if (e.Server != w.windowServer() || e.Class != class) && len(keep) < maxRemembered {
			keep = append(keep, e)
		}
	}
	data, err := json.MarshalIndent(windowsFile{Schema: 1, Windows: keep}, "", "  ")
	if err == nil {
		err = writeFileAtomic(w.windowsPath(), append(data, '\n'))
	}
	if err != nil {
		w.logf("WARNING: cannot keep the window in %s: %v", parse.WindowsPath, err)
	}
}

// startWindow picks the category's controller start: the remembered
// window, said in the log, else the default.
func (w *Worker) startWindow(c Category, config string) *Controller {
	if !c.Adaptive {
		return newWindow(c)
	}
	if e, ok := w.rememberedWindow(c.Class, config); ok {
		ctl := NewControllerFrom(c.Concurrency, e.Window)
		w.logf("%s: adaptive window from %d (the last good one for this server and class %s, %s) to at most %d (--concurrency N fixes it)",
			c.Name, ctl.Window(), c.Class, e.At.Format("2006-01-02 15:04"), c.Concurrency)
		return ctl
	}
	ctl := newWindow(c)
	w.logf("%s: adaptive window from %d to at most %d (--concurrency N fixes it)", c.Name, ctl.Window(), c.Concurrency)
	return ctl
}

// keepWindow remembers the controller's good window, at most every
// rememberEvery while the category runs, and at its end.
func (r *catRun) keepWindow(final bool) {
	r.mu.Lock()
	good, fixed := r.ctl.Good(), r.ctl.Fixed()
	due := final || time.Since(r.keptAt) >= rememberEvery
	if fixed || good == 0 || !due || (good == r.kept && !final) {
		r.mu.Unlock()
		return
	}
	r.kept, r.keptAt = good, time.Now()
	r.mu.Unlock()
	r.w.rememberWindow(r.c.Class, r.config, good)
}

// rememberEvery spaces the writes of windows.json while a category runs: a
// kill -9 loses at most that much of it.
const rememberEvery = 30 * time.Second

package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// NotifyConfig says how to tell the user that something happened overnight.
type NotifyConfig struct {
	OSC             bool                                 // also send OSC 9 and OSC 777 desktop notices
	Command         string                               // run with the event as JSON on stdin (ntfy, Slack, ...)
	DisconnectAfter time.Duration                        // notify a disconnection that lasts this long
	Off             map[string]bool                      // kinds switched off
	MinGap          time.Duration                        // at most one notice of a kind per gap
	Run             func(cmd string, stdin []byte) error // for tests; default sh -c
}

// NotifyKinds are the kinds of notice, the names notify.off takes. A new
// kind of notice is added here too.
var NotifyKinds = []string{"stall", "category_done", "pipeline_done", "worker_exit", "server_crash", "server_down", "server_hang", "server_stop", "disconnect", "gpu_lost", "gpu_idle", "disk_low", "throughput_drop", "gate_below"}

type notifier struct {
	cfg      NotifyConfig
	host     string
	now      func() time.Time
	last     map[string]time.Time
	downSent bool
	// the host's vitals as last seen with the link up (a stale snapshot
	// has none): a reconnect rings no bell for what was rung already
	gpusLost map[int]bool
	gpusIdle bool
	diskLow  bool
}

func newNotifier(cfg NotifyConfig, host string, now func() time.Time) *notifier {
	if cfg.MinGap <= 0 {
		cfg.MinGap = time.Minute
	}
	if cfg.DisconnectAfter <= 0 {
		cfg.DisconnectAfter = 5 * time.Minute
	}
	if cfg.Run == nil {
		cfg.Run = func(cmd string, stdin []byte) error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := exec.CommandContext(ctx, "sh", "-c", cmd)
			c.Stdin = bytes.NewReader(stdin)
			return c.Run()
		}
	}
	return &notifier{cfg: cfg, host: host, now: now, last: map[string]time.Time{}}
}

// Notice is what a notify_command receives on stdin.
type Notice struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Kind     string    `json:"kind"`
	Category string    `json:"category,omitempty"`
	Text     string    `json:"text"`
}

// changes compares two snapshots and returns the notices to send.
func (n *notifier) changes(old, cur snapshot.Snapshot) []tea.Cmd {
	var out []tea.Cmd
	add := func(kind, cat, text string) {
		if cmd := n.notify(kind, cat, text); cmd != nil {
			out = append(out, cmd)
		}
	}
	prev := map[string]snapshot.CategoryState{}
	for _, c := range old.Categories {
		prev[c.Name] = c.State
	}
	allDone := len(cur.Categories) > 0
	for _, c := range cur.Categories {
		was := prev[c.Name]
		switch {
		case c.State == snapshot.StateStalled && was != snapshot.StateStalled && was != "":
			add("stall", c.Name, c.Name+" stalled")
		case c.State == snapshot.StateDone && was != snapshot.StateDone && was != "" && was != snapshot.StateUnknown:
			add("category_done", c.Name, c.Name+" done")
		}
		allDone = allDone && snapshot.Final(c.State)
	}
	gateNotices(old, cur, add)
	if allDone && !allFinal(old) && len(old.Categories) > 0 {
		add("pipeline_done", "", "pipeline done")
	}
	if snapshot.Alive(old.Worker.State) && !snapshot.Alive(cur.Worker.State) && cur.Worker.State != snapshot.WorkerUnknown &&
		!cur.Worker.ByYou && cur.Worker.State != snapshot.WorkerExited {
		add("worker_exit", "", "worker "+string(cur.Worker.State)) // our own kill, or the job's end (pipeline_done), rings no worker bell
	}
	if st := cur.Server.State; st != old.Server.State && old.Server.State != "" {
		switch st {
		case snapshot.ServerDown:
			add("server_down", "", "server down: "+cur.Server.Reason)
		case snapshot.ServerCrashed:
			add("server_crash", "", "server crashed: "+cur.Server.LastCrash)
		case snapshot.ServerHung:
			add("server_hang", "", "server hung: "+cur.Server.Reason) // alive, answering nothing: a night lost as surely as a crash
		case snapshot.ServerStopped:
			add("server_stop", "", "server stopped: "+cur.Server.Reason)
		}
	}
	if cur.Connection.State.Up() {
		n.vitals(cur.Vitals, add)
		dropNotices(old, cur, add)
	}
	if cur.Connection.State.Up() {
		n.downSent = false
	} else if lc := cur.Connection.LastContact; lc != nil && !n.downSent && n.now().Sub(lostSince(*lc, cur.Events)) > n.cfg.DisconnectAfter {
		n.downSent = true
		add("disconnect", "", "no contact with "+n.host+" for "+dur(n.now().Sub(lostSince(*lc, cur.Events))))
	}
	return out
}

// vitals notices: a GPU that dropped out, every GPU idle while the worker
// runs, the disk under its floor or full within 2 h (the pipeline decides,
// and records the same as events gpu_lost, gpu_idle and disk_low).
func (n *notifier) vitals(v snapshot.Vitals, add func(kind, cat, text string)) {
	if n.gpusLost == nil {
		n.gpusLost = map[int]bool{}
	}
	var newly []string
	now := map[int]bool{}
	for _, i := range v.GPUsLost {
		now[i] = true
		if !n.gpusLost[i] {
			newly = append(newly, strconv.Itoa(i))
		}
	}
	n.gpusLost = now
	if len(newly) > 0 {
		text := "GPU " + strings.Join(newly, ", ") + " dropped out"
		if len(newly) > 1 {
			text = "GPUs " + strings.Join(newly, ", ") + " dropped out"
		}
		add("gpu_lost", "", fmt.Sprintf("%s: %d GPUs left", text, len(v.GPUs)))
	}
	if v.GPUsIdle && !n.gpusIdle {
		add("gpu_idle", "", "every GPU idle while the worker runs")
	}
	n.gpusIdle = v.GPUsIdle
	if v.Disk != nil {
		low := v.Disk.Low
		if low && !n.diskLow {
			add("disk_low", "", "disk low: "+diskText(*v.Disk))
		}
		n.diskLow = low
	}
}

func allFinal(s snapshot.Snapshot) bool {
	for _, c := range s.Categories {
		if !snapshot.Final(c.State) {
			return false
		}
	}
	return len(s.Categories) > 0
}

// notify rings the bell, sends OSC 9/777 and runs the command, rate-limited.
func (n *notifier) notify(kind, cat, text string) tea.Cmd {
	if n.cfg.Off[kind] {
		return nil
	}
	now := n.now()
	if t, ok := n.last[kind+cat]; ok && now.Sub(t) < n.cfg.MinGap {
		return nil
	}
	n.last[kind+cat] = now
	text = parse.SanitizeString(n.host + ": " + text) // the text comes from the host
	seq := "\a"
	if n.cfg.OSC {
		seq += "\x1b]9;" + text + "\x07" + "\x1b]777;notify;synthwatch;" + text + "\x07"
	}
	cmds := []tea.Cmd{tea.Raw(seq)}
	if n.cfg.Command != "" {
		data, _ := json.Marshal(Notice{Time: now.UTC(), Host: n.host, Kind: kind, Category: cat, Text: text})
		run, c := n.cfg.Run, n.cfg.Command
		cmds = append(cmds, func() tea.Msg {
			_ = run(c, append(data, '\n'))
			return nil
		})
	}
	return tea.Batch(cmds...)
}

func diskText(d snapshot.Disk) string {
	t := snapshot.FormatBytes(d.FreeBytes) + " free"
	if d.TotalBytes > 0 {
		t += fmt.Sprintf(" (%.1f%%)", 100*float64(d.FreeBytes)/float64(d.TotalBytes))
	}
	if d.FullInS != nil {
		t += ", full in " + snapshot.FormatETA(d.FullInS)
	}
	return t
}

// lostSince is when the link counts as lost: its last contact, or the last
// wake from a sleep if later. No contact could happen while this machine
// slept, and the sleep is its own event, so a wake rings no disconnect bell
// for the night.
func lostSince(contact time.Time, evs []snapshot.Event) time.Time {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == "slept" {
			if evs[i].Time.After(contact) {
				return evs[i].Time
			}
			break
		}
	}
	return contact
}

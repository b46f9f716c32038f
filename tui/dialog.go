package tui

import (
	"context"
	"fmt"
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// hostAction is what a confirmation dialog asks to do to the host.
type hostAction int

const (
	actLaunch hostAction = iota
	actResume
	actKill
	actRestart
)

// dialog is a confirmation; it defaults to No, and what it acts on (the
// pid, the category) is fixed when it opens.
type dialog struct {
	act  hostAction
	text string
	pid  int
	cat  string
	all  []string
}

func (m Model) newDialog(act hostAction) *dialog {
	host := m.be.Host()
	d := &dialog{act: act, pid: m.snap.Worker.PID, cat: m.selected(), all: m.categoryNames()}
	if why, down := m.noContact(); down && (act != actRestart || d.cat != "") {
		// nothing on screen says what the worker does: no action on it
		d.text, d.pid = why, -1
		return d
	}
	root := sanitizeName(m.snap.Root)
	if why := m.rootProblem(); why != "" && (act == actLaunch || act == actResume) {
		d.text, d.pid = "Nothing to launch: "+sanitizeName(why)+". Set the root with --root, or root in config.toml.", -1
		return d
	}
	switch act {
	case actLaunch:
		d.text = fmt.Sprintf("Launch the worker on %s in %s?", host, root)
	case actResume:
		d.text = fmt.Sprintf("Resume the worker on %s in %s? It skips what is done.", host, root)
	case actKill:
		if d.pid == 0 || !snapshot.Alive(m.snap.Worker.State) {
			d.text = "No worker is running."
			d.pid = -1
		} else {
			d.text = fmt.Sprintf("Kill worker pid %d on %s? (SIGTERM, then SIGKILL after the grace)", d.pid, host)
		}
	case actRestart:
		if d.cat == "" {
			return nil
		}
		d.text = fmt.Sprintf("Restart with %q first? (kill the worker, then resume starting with it)", d.cat)
	}
	return d
}

// noContact says why no action can be asked now: the link is down, or
// the snapshot is stale, so whether a worker runs is not known.
func (m Model) noContact() (string, bool) {
	c := m.snap.Connection
	if c.State.Up() && m.snap.Worker.State != snapshot.WorkerUnknown {
		return "", false
	}
	since := "never connected"
	if c.LastContact != nil {
		since = "last contact " + c.LastContact.Local().Format("15:04:05")
	}
	return fmt.Sprintf("No contact with %s (%s): whether a worker runs is not known. Try again when the link is back.", m.be.Host(), since), true
}

func (m Model) dialogKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	d := m.dialog
	m.dialog = nil
	if !key.Matches(k, m.keys.Yes.Binding) || d.pid == -1 {
		return m, nil // anything but yes is no
	}
	be := m.be
	switch d.act {
	case actLaunch, actResume:
		t := actionTask("launch", "launching", launchMaybe)
		if d.act == actResume {
			t = actionTask("resume", "resuming", launchMaybe)
		}
		cmd := m.action(t, func(ctx context.Context) (string, error) {
			pid, err := be.Launch(ctx, nil)
			return "worker pid " + strconv.Itoa(pid), err
		})
		return m, cmd
	case actKill:
		pid := d.pid
		cmd := m.action(actionTask("kill", fmt.Sprintf("killing pid %d", pid), killMaybe), func(ctx context.Context) (string, error) {
			how, err := be.Kill(ctx, pid)
			return fmt.Sprintf("pid %d %s", pid, how), err
		})
		return m, cmd
	case actRestart:
		cat, all := d.cat, d.all
		cmd := m.action(actionTask("restart "+cat, "restarting "+cat, restartMaybe), func(ctx context.Context) (string, error) {
			pid, err := be.Restart(ctx, cat, all)
			return "worker pid " + strconv.Itoa(pid), err
		})
		return m, cmd
	}
	return m, nil
}

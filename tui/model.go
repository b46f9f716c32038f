package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// Config shapes the dashboard.
type Config struct {
	PollEvery time.Duration
	ReadOnly  bool
	Dark      bool
	Plain     bool // NO_COLOR
	Notify    NotifyConfig
	Now       func() time.Time
	Repaint   time.Duration // the fleet: a host's news repaints at most this often (0: at once)
}

// Messages. Every result carries the generation or id of the request that
// made it, so a late answer from an old connection or action is dropped.
type (
	pollMsg struct {
		gen            int
		snap           snapshot.Snapshot
		worker, server []string
	}
	tickMsg   time.Time
	actionMsg struct {
		id   int
		what string
		text string
		err  error
	}
	// PromptMsg asks the user something the connection needs (an unknown
	// host key, a passphrase) and waits for the answer on Reply.
	PromptMsg struct {
		Secret bool
		Text   string
		Reply  chan string
	}
)

const (
	focusTable = iota
	focusLog
)

// Model is the one root model.
type Model struct {
	be     Backend
	cfg    Config
	st     Styles
	keys   keyMap
	width  int
	height int

	snap     snapshot.Snapshot
	haveSnap bool
	conn     snapshot.Connection // the link now (Backend.Link), fresher than snap's
	gen      int
	polling  bool

	sel   int
	top   int // the first category row the table shows (layout keeps sel in view)
	focus int
	logs  logPane

	dialog      *dialog
	input       *lineInput
	prompt      *PromptMsg
	help        bool
	notesOpen   bool // the header's messages, whole (m)
	runs        bool // the selected category's run history is open (runs.go)
	serverWide  bool // the server panel is open wide (serverpane.go)
	away        []snapshot.Event
	lastKey     time.Time
	actionID    int
	busy        map[int]task // running tasks by id (tasks.go)
	pollSoon    bool         // a poll is wanted as soon as the one in flight returns
	result      string
	resultState resultState
	spin        int
	notifier    *notifier
	quitMsg     string
	flash       string    // a word for a key that did nothing (read-only), in the footer
	flashUntil  time.Time // until then
	// the worker as last read over a live link, for the quit message
	lastWorker   snapshot.Worker
	lastWorkerAt time.Time
}

// New makes the model.
func New(be Backend, cfg Config) Model {
	if cfg.PollEvery <= 0 {
		cfg.PollEvery = 2 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m := Model{be: be, cfg: cfg, st: NewStyles(cfg.Dark, cfg.Plain), keys: newKeyMap(cfg.ReadOnly), busy: map[int]task{},
		logs: newLogPane(), lastKey: cfg.Now(), width: 120, height: 40}
	m.conn = be.Link()
	m.notifier = newNotifier(cfg.Notify, be.Host(), cfg.Now)
	m.layout()
	return m
}

func (m Model) Init() tea.Cmd {
	poll := m.pollCmd() // Init's m is a copy: polling=true does not last; the first pollMsg resets it
	return tea.Batch(poll, tick(time.Second))
}

// tick keeps the clock's beat (tea.Every), as polls do: a fleet's hosts
// tick together, and one repaint shows what their ticks changed.
func tick(d time.Duration) tea.Cmd {
	return tea.Every(d, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// tickEvery is fast only while something on screen moves (a spinner, the
// age of a lost link); an idle dashboard wakes rarely.
func (m Model) tickEvery() time.Duration {
	if len(m.busy) > 0 || m.conn.Stale() {
		return time.Second
	}
	return 5 * time.Second
}

// pollLimit bounds a poll; a dead link is found sooner, by the keepalives.
const pollLimit = 60 * time.Second

// FirstReadLimit bounds a poll that has no category yet: the first read of
// a host with thousands of categories and no synthwatch there (the shell
// reads some 15 ms a category: 10,000 take ~3 min) must come to the first
// screen, not be cut every minute and start again. The screen answers keys
// meanwhile; status's one-shot poll has the same bound.
const FirstReadLimit = 10 * time.Minute

func (m *Model) pollCmd() tea.Cmd {
	m.polling = true
	gen, be := m.gen, m.be
	limit := pollLimit
	if len(m.snap.Categories) == 0 {
		limit = FirstReadLimit
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		s := be.Poll(ctx)
		w, sv := be.Logs()
		return pollMsg{gen: gen, snap: s, worker: w, server: sv}
	}
}

// pollNow asks for a poll at once and drops the answer of the one in
// flight (its figures predate what just happened). One poll runs at a
// time: a poll blocked on a black-holed link is not joined by more; the
// next starts when it returns.
func (m *Model) pollNow() tea.Cmd {
	m.gen++
	if m.polling {
		m.pollSoon = true
		return nil
	}
	return m.pollCmd()
}

// result is the line an action leaves in the header and the timeline.
func (a actionMsg) result() string {
	if a.err != nil {
		return fmt.Sprintf("%s failed: %v", a.what, a.err)
	}
	return fmt.Sprintf("%s: %s", a.what, a.text)
}

// Update handles msg, then sizes the panes for the layout it leaves.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	next, cmd := m.update(msg)
	nm := next.(Model)
	nm.layout()
	return nm, cmd
}

// tokensNow says the next poll is asked at once: the first table shows
// the counts at once, and the tokens the counts left to the host are
// summed by the next polls, each of the agent's answers within its time
// budget (Summing.Resume): now, not a beat later.
func tokensNow(s snapshot.Snapshot, first bool) bool {
	if !s.Connection.State.Up() {
		return false
	}
	return first && s.TokensPartial || s.TokensSumming != nil && s.TokensSumming.Resume
}

func (m Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		return m, nil
	case pollMsg:
		m.polling = false
		if msg.gen != m.gen { // an answer from before a reconnect or an action: stale
			if m.pollSoon {
				m.pollSoon = false
				cmd := m.pollCmd()
				return m, cmd
			}
			return m, nil
		}
		m.pollSoon = false   // this answer is of the newest generation: fresh enough
		m.conn = m.be.Link() // a poll is contact: the header's age must not lag it
		m.reconnected(msg.gen)
		var cmds []tea.Cmd
		first := !m.haveSnap
		if m.haveSnap {
			cmds = append(cmds, m.notifier.changes(m.snap, msg.snap)...)
		}
		m.snap, m.haveSnap = msg.snap, true
		if msg.snap.Connection.State.Up() && msg.snap.Worker.State != snapshot.WorkerUnknown && msg.snap.Worker.State != "" {
			m.lastWorker, m.lastWorkerAt = msg.snap.Worker, msg.snap.Time
		}
		m.logs.set(msg.worker, msg.server, msg.snap.Events)
		if m.sel >= len(m.snap.Categories) {
			m.sel = max(0, len(m.snap.Categories)-1)
		}
		gen := m.gen
		next := m.nextPoll()
		if msg.snap.Connection.Stale() && m.conn.State == snapshot.LinkConnected {
			next = min(next, 200*time.Millisecond) // the link came back after this poll's reads failed: fresh figures now (bounded: a link that says up and fails still rests)
		}
		if tokensNow(msg.snap, first) {
			next = 0
		}
		cmds = append(cmds, tea.Tick(next, func(time.Time) tea.Msg { return pollDue{gen} }))
		return m, tea.Batch(cmds...)
	case pollDue:
		if msg.gen != m.gen || m.polling {
			return m, nil
		}
		cmd := m.pollCmd()
		return m, cmd
	case tickMsg:
		was := m.conn
		m.conn = m.be.Link()
		m.spin++
		// back (a wake, a reconnect): fresh figures now, not at the next
		// poll; not the first dial's end, which the first poll waits for
		// (pipeline.Watcher.Poll): a poll more would drop its answer
		firstDial := was.State == snapshot.LinkConnecting && !m.haveSnap
		if was.Stale() && m.conn.State == snapshot.LinkConnected && !firstDial {
			m.gen++
			return m, tea.Batch(tick(m.tickEvery()), m.pollCmd())
		}
		return m, tick(m.tickEvery())
	case actionMsg:
		if _, ok := m.busy[msg.id]; !ok {
			return m, nil // cancelled: its late answer must not overwrite what came since
		}
		delete(m.busy, msg.id)
		m.result, m.resultState = msg.result(), resultOK // the Cmd recorded it in the timeline
		if msg.err != nil {
			m.resultState = resultFailed
		}
		cmd := m.pollNow()
		return m, cmd
	case tea.ResumeMsg: // back from ctrl+z: the shell drew over the screen, and the figures are old
		cmd := m.pollNow()
		return m, tea.Batch(tea.ClearScreen, cmd)
	case PromptMsg:
		p := msg
		m.prompt = &p
		m.input = &lineInput{secret: p.Secret}
		return m, nil
	case tea.KeyPressMsg:
		return m.key(msg)
	}
	return m, nil
}

// nextPoll is how long until the next poll: to the next multiple of the
// interval on the clock, so a poll comes every interval, not interval +
// poll time, and a fleet's hosts poll together, their answers drawn in one
// repaint rather than one each. A slow host still rests a quarter interval,
// and the poll after that one finds the beat again.
func (m Model) nextPoll() time.Duration {
	every := m.cfg.PollEvery
	next := every - time.Duration(m.cfg.Now().UnixNano()%int64(every))
	return max(next, every/4)
}

// pollDue asks for the next poll of a generation.
type pollDue struct{ gen int }

func (m Model) key(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	now := m.cfg.Now()
	idle := now.Sub(m.lastKey)
	since := m.lastKey
	m.lastKey = now
	if idle > 10*time.Minute && m.prompt == nil && m.dialog == nil {
		m.away = eventsSince(m.be.Timeline().Recent(500), since)
		if len(m.away) > 0 {
			return m, nil // this key only opens the summary
		}
	}
	km := m.keys
	switch {
	case m.prompt != nil:
		return m.promptKey(k)
	case m.input != nil:
		return m.inputKey(k)
	case m.dialog != nil:
		return m.dialogKey(k)
	case m.help || m.away != nil || m.runs || m.notesOpen:
		m.help, m.away, m.runs, m.notesOpen = false, nil, false, false
		if !key.Matches(k, km.Quit.Binding) || m.stopsTask(k) {
			return m, nil // any key closes the box; only quit also acts
		}
	}
	switch {
	case m.stopsTask(k): // before quit: ctrl+c cancels a running task first
		cmd := m.cancelTask()
		return m, cmd
	case key.Matches(k, km.Quit.Binding):
		m.quitMsg = m.quitMessage() + m.unfinished()
		return m, tea.Quit // never waits for a poll or a task: they end with the process
	case key.Matches(k, km.Help.Binding):
		m.help = true
	case key.Matches(k, km.Notes.Binding):
		m.notesOpen = true
	case key.Matches(k, km.Redraw.Binding):
		return m, tea.ClearScreen
	case key.Matches(k, km.Suspend.Binding):
		return m, tea.Suspend
	case km.offKey(k.String()) != "":
		m.flash, m.flashUntil = km.offKey(k.String()), now.Add(4*time.Second)
	case key.Matches(k, km.Runs.Binding):
		m.runs = len(m.snap.Categories) > 0
	case key.Matches(k, km.Servers.Binding):
		m.serverWide = !m.serverWide
	case key.Matches(k, km.Down.Binding):
		if m.focus == focusLog {
			m.logs.scroll(1)
		} else {
			m.sel = min(m.sel+1, max(0, len(m.snap.Categories)-1))
		}
	case key.Matches(k, km.Up.Binding):
		if m.focus == focusLog {
			m.logs.scroll(-1)
		} else {
			m.sel = max(m.sel-1, 0)
		}
	case key.Matches(k, km.PageDown.Binding):
		m.logs.scroll(10)
	case key.Matches(k, km.PageUp.Binding):
		m.logs.scroll(-10)
	case key.Matches(k, km.Pane.Binding):
		m.focus = (m.focus + 1) % 2
	case key.Matches(k, km.Tabs.Binding):
		m.logs.tab = int(k.String()[0] - '1')
		m.logs.follow = true
	case key.Matches(k, km.Follow.Binding):
		m.logs.toggleFollow()
	case key.Matches(k, km.Wrap.Binding):
		m.logs.wrap = !m.logs.wrap
	case key.Matches(k, km.Search.Binding):
		m.input = &lineInput{}
	case key.Matches(k, km.Next.Binding):
		m.logs.next(1)
	case key.Matches(k, km.Prev.Binding):
		m.logs.next(-1)
	case key.Matches(k, km.Error.Binding):
		m.logs.nextError()
	case key.Matches(k, km.Reconnect.Binding):
		cmd := m.reconnect()
		return m, cmd
	case key.Matches(k, km.Launch.Binding): // disabled bindings never match (read-only)
		m.dialog = m.newDialog(actLaunch)
	case key.Matches(k, km.Resume.Binding):
		m.dialog = m.newDialog(actResume)
	case key.Matches(k, km.Kill.Binding):
		m.dialog = m.newDialog(actKill)
	case key.Matches(k, km.Restart.Binding):
		m.dialog = m.newDialog(actRestart)
	}
	return m, nil
}

// stopsTask: k is the cancel key and a task runs for it to cancel.
func (m Model) stopsTask(k tea.KeyPressMsg) bool {
	return len(m.busy) > 0 && key.Matches(k, m.keys.Stop.Binding)
}

// eventsSince is the "while you were away" summary.
func eventsSince(evs []snapshot.Event, t time.Time) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range evs {
		if e.Time.After(t) {
			out = append(out, e)
		}
	}
	return out
}

func (m Model) inputKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(k, m.keys.Enter.Binding):
		m.logs.find(m.input.text)
		m.input = nil
	case key.Matches(k, m.keys.Cancel.Binding):
		m.input = nil
	default:
		m.input.key(k, m.keys)
	}
	return m, nil
}

func (m Model) promptKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	p := m.prompt
	switch {
	case key.Matches(k, m.keys.Enter.Binding):
		p.Reply <- m.input.text
	case key.Matches(k, m.keys.Cancel.Binding): // ctrl+c too: it refuses here, it does not quit
		p.Reply <- ""
	default:
		m.input.key(k, m.keys)
		return m, nil
	}
	m.prompt, m.input = nil, nil
	return m, nil
}

// quitMessage says what is left behind on the host: the worker's real
// state as last read, or that the host was never reached.
func (m Model) quitMessage() string {
	host := m.be.Host()
	if m.conn.Linked() && m.conn.LastContact == nil {
		msg := "synthwatch: " + host + " was never reached; nothing there was read or changed"
		if m.conn.Error != "" {
			msg += " (last error: " + m.conn.Error + ")"
		}
		return msg
	}
	w := m.lastWorker
	if m.lastWorkerAt.IsZero() {
		return "synthwatch: the worker's state on " + host + " is unknown (nothing was read from the host)"
	}
	name := ""
	if w.PID > 0 {
		name = fmt.Sprintf(" (pid %d", w.PID)
		if w.Category != "" {
			name += ", " + sanitizeName(w.Category)
		}
		name += ")"
	}
	if m.stale() {
		when := m.lastWorkerAt.Local().Format("15:04:05")
		if workerAlive(w.State) {
			return "synthwatch: " + host + " is out of reach now; the worker was running there at " + when + name
		}
		return "synthwatch: " + host + " is out of reach now; no worker was running there at " + when
	}
	if workerAlive(w.State) {
		return "synthwatch: the worker keeps running on " + host + name
	}
	return "synthwatch: no worker is running on " + host + " (worker " + string(w.State) + ")"
}

// unfinished is what quitting left unconfirmed: each task still running,
// oldest first, and what the host may have done of it.
func (m Model) unfinished() string {
	var ids []int
	for id := range m.busy {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := ""
	for _, id := range ids {
		t := m.busy[id]
		out += fmt.Sprintf("\nsynthwatch: %s was still running when you quit: %s", t.what, t.ifCancelled)
	}
	return out
}

// workerAlive says whether a worker state is a live process.
func workerAlive(state snapshot.WorkerState) bool {
	return snapshot.Alive(state) || strings.HasPrefix(string(state), string(snapshot.WorkerRunning)) // "running (…)" from an older pipeline
}

// QuitMessage is what to print once the program ends.
func (m Model) QuitMessage() string { return m.quitMsg }

// selected is the highlighted category's name.
func (m Model) selected() string {
	if m.sel < len(m.snap.Categories) {
		return m.snap.Categories[m.sel].Name
	}
	return ""
}

func (m Model) categoryNames() []string {
	var out []string
	for _, c := range m.snap.Categories {
		out = append(out, c.Name)
	}
	return out
}

// lineInput is a one-line text field (search, passphrase, host-key answer).
type lineInput struct {
	text   string
	secret bool
}

func (l *lineInput) key(k tea.KeyPressMsg, km keyMap) {
	switch {
	case key.Matches(k, km.Backspace.Binding):
		if r := []rune(l.text); len(r) > 0 {
			l.text = string(r[:len(r)-1])
		}
	default:
		if k.Text != "" {
			l.text += k.Text
		}
	}
}

func (l *lineInput) view() string {
	if l.secret {
		return strings.Repeat("•", len([]rune(l.text)))
	}
	return l.text
}

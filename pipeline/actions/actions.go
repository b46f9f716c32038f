// Package actions is what the user does to a host (Actor): launch, kill,
// resume, restart and deploy, each as exact argv over the host's SSH
// session, every name quoted as data; it reads the host's processes
// through liveness.Reader, as the poll's worker part does.
package actions

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/liveness"
	"github.com/synthwatch/synthwatch/remote"
)

// Actor runs the actions on a host. Every argument that goes into a remote
// shell line is quoted; names from the host are data, never code.
type Actor struct {
	H         remote.Host
	Root      string
	WorkerBin string // --worker-bin; "" finds synthwatch on PATH, then ~/.local/bin
	Extra     []string
	// ServerURL, when set, is the worker's server. It may hold a password
	// (a gateway's basic auth), and every account on the host can read a
	// process's /proc/PID/cmdline, so it never goes into argv: the launch
	// reads it from the exec's stdin and hands it to the worker in its
	// environment (worker.ServerEnv; /proc/PID/environ is the owner's only).
	ServerURL string

	stand     *atomic.Bool    // checked's answers stand: no act since (nil: no checks batch)
	wjson     *remote.CatAsk  // checked's worker.json, read while they stand
	preflight *remote.ExecAsk // checked's launch check, read while they stand
	checks    liveness.Asks   // checked's processes and root, read while they stand
}

// checked is a with the reads its checks make (worker.json, the worker's
// /proc entries, the scan for other writers; with preflight, the launch
// check) answered from one exec: on a slow link each is otherwise its own
// round trips, and the SFTP session's too. The answers stand until the
// first act (acted): what follows an act reads the host anew.
func (a Actor) checked(ctx context.Context, preflight bool) Actor {
	if _, linked := a.H.(remote.Linked); !linked || a.stand != nil {
		return a
	}
	l := a.layout()
	b := &remote.Batch{}
	wjson := b.Cat(l.WorkerJSON(), 4<<20)
	real := b.RealPath(a.Root)
	procs := b.Procs(l.WorkerJSON(), remote.HoldersArgv(a.procs().PatternsAt(ctx, "", a.workerLog(), nil)))
	var pf *remote.ExecAsk
	if preflight {
		pf = b.Exec(a.preflightArgv()...)
	}
	if remote.NewFallback(a.H).Run(ctx, b) != nil {
		return a // read check by check
	}
	a.stand, a.wjson, a.preflight = new(atomic.Bool), wjson, pf
	a.stand.Store(true)
	a.checks.Procs, a.checks.Real = procs, real
	return a
}

// standing says whether checked's answers stand: no act since.
func (a Actor) standing() bool { return a.stand != nil && a.stand.Load() }

// acted ends the checks' answers.
func (a Actor) acted() {
	if a.stand != nil {
		a.stand.Store(false)
	}
}

// ErrRunning refuses a launch while a worker runs, or while any other
// process writes the worker log or a category's raw_responses.jsonl.
var ErrRunning = errors.New("a worker is already running")

// ErrNothingLeft: the launched worker found every category done and exited.
var ErrNothingLeft = errors.New("the worker found nothing left to do: every category is done or skipped")

// launchScript starts the worker detached from the SSH session (setsid, so
// it is its own process group and survives the connection), appending to
// the worker log, and prints its pid (remote/host/launch.sh). Before, as
// preflightScript, it resolves the binary, checks the root and opens the
// worker log never through a link nor a file another account owns
// (remote/host/launchcheck.sh). The binary and every argument arrive as
// positional parameters.
var launchScript = remote.HostScript("launch.sh")

// serverOnStdin, first after the log in a launch's argv, says that the
// server's URL comes on stdin (Actor.ServerURL).
const serverOnStdin = "--server-on-stdin"

// preflightScript is launchScript up to the start: it fails as a launch
// would, with the same message, and starts nothing
// (remote/host/preflight.sh).
var preflightScript = remote.HostScript("preflight.sh")

// Preflight checks what a launch needs that can be checked before one:
// the binary is there and executable, the root and its logs folder usable,
// the worker log writable. Restart runs it before it stops anything.
func (a Actor) Preflight(ctx context.Context) error {
	r, ok := a.preflight.Result()
	var err error
	if !ok || !a.standing() {
		r, err = a.H.Exec(ctx, a.preflightArgv()...)
	}
	if err != nil {
		return fmt.Errorf("launch check: %w", err)
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("launch: exit %d: %s", r.ExitCode, strings.TrimSpace(string(r.Stderr)))
	}
	return nil
}

func (a Actor) preflightArgv() []string {
	return []string{"sh", "-c", preflightScript, "synthwatch-launch", a.WorkerBin, a.Root, a.workerLog()}
}

// LaunchArgv is the exact command a launch runs on the host. Each category
// is its own "--only NAME" pair: a name may hold a comma.
func (a Actor) LaunchArgv(only []string) []string {
	argv := []string{"sh", "-c", launchScript, "synthwatch-launch", a.WorkerBin, a.Root, a.workerLog()}
	if a.ServerURL != "" {
		argv = append(argv, serverOnStdin)
	}
	for _, c := range only {
		argv = append(argv, "--only", c)
	}
	return append(argv, a.Extra...)
}

// Launch starts the worker unless one runs, or any other process writes
// the worker log or a category's raw_responses.jsonl (a second writer
// duplicates records), and reports its pid once it is seen alive on the host.
func (a Actor) Launch(ctx context.Context, only []string) (int, error) {
	a = a.checked(ctx, false)
	defer a.acted()
	if err := a.refuseWriters(ctx, 0); err != nil {
		return 0, err
	}
	return a.launch(ctx, only)
}

func (a Actor) launch(ctx context.Context, only []string) (int, error) {
	a.acted()
	r, err := a.execLaunch(ctx, only)
	if err != nil {
		return 0, fmt.Errorf("launch: %w", err)
	}
	if r.ExitCode != 0 {
		return 0, fmt.Errorf("launch: exit %d: %s", r.ExitCode, strings.TrimSpace(string(r.Stderr)))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(r.Stdout)))
	if err != nil {
		return 0, fmt.Errorf("launch: no pid in %q", r.Stdout)
	}
	// it must still be alive a moment later (a second worker exits at once on the lock)
	deadline := time.Now().Add(3 * time.Second)
	for {
		select { // a cancel is no "exited at once": the worker was started, only not seen alive yet
		case <-ctx.Done():
			return pid, fmt.Errorf("launch: started pid %d, then stopped waiting to see it alive: %w", pid, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
		p, err := a.procs().Read(ctx, pid)
		if errors.Is(err, liveness.ErrUnknown) && !errors.Is(err, remote.ErrDisconnected) {
			// a read of /proc that failed (a loaded host's exec) tells
			// nothing of the worker: asked again, not taken for its end
			if time.Now().After(deadline) {
				return pid, fmt.Errorf("launch: started pid %d, but the host's /proc could not be read to see it alive: %w", pid, err)
			}
			continue
		}
		alive := p != nil && p.IsWorker()
		if err == nil && ctx.Err() != nil {
			err = fmt.Errorf("launch: started pid %d, then stopped waiting to see it alive: %w", pid, ctx.Err())
		}
		if err != nil {
			return pid, err
		}
		if !alive {
			if data, err := a.H.ReadAt(ctx, a.layout().WorkerJSON(), 0, 4<<20); err == nil {
				if st, err := parse.ParseWorkerState(data); err == nil && st.PID == pid && st.State == parse.WorkerDone {
					if failed := st.FailedCategories(); len(failed) > 0 {
						return pid, fmt.Errorf("launch: the worker (pid %d) went through every category at once; %d failed: %s; see %s",
							pid, len(failed), strings.Join(failed, ", "), a.workerLog())
					}
					return pid, ErrNothingLeft
				}
			}
			why := ""
			if l := a.lastLogLine(ctx); l != "" {
				why = ": " + l
			}
			return pid, fmt.Errorf("launch: the worker (pid %d) exited at once%s; see %s", pid, why, a.workerLog())
		}
		if time.Now().After(deadline) {
			return pid, nil
		}
	}
}

// execLaunch runs LaunchArgv, the server's URL (if any) on its stdin.
func (a Actor) execLaunch(ctx context.Context, only []string) (remote.ExecResult, error) {
	if a.ServerURL == "" {
		return a.H.Exec(ctx, a.LaunchArgv(only)...)
	}
	ie, ok := a.H.(remote.InputExecer)
	if !ok {
		return remote.ExecResult{}, errors.New("this host cannot take the server URL on stdin, and it is kept out of the command line")
	}
	return ie.ExecInput(ctx, strings.NewReader(a.ServerURL+"\n"), a.LaunchArgv(only)...)
}

// procs reads the host's processes: from checked's answers while they stand.
func (a Actor) procs() *liveness.Reader {
	r := liveness.NewReader(a.H, a.Root)
	if a.standing() {
		r.Use(a.checks.Procs, a.checks.Real)
	}
	return r
}

func (a Actor) layout() parse.Layout { return parse.Layout{Root: a.Root} }

func (a Actor) workerLog() string { return a.layout().WorkerLog() }

// lastLogLine is the worker log's last line (why a worker that exited at
// once did), sanitised and cut; "" when it cannot be read.
func (a Actor) lastLogLine(ctx context.Context) string {
	fi, err := a.H.Stat(ctx, a.workerLog())
	if err != nil {
		return ""
	}
	const back = 8 << 10
	data, err := a.H.ReadAt(ctx, a.workerLog(), max(fi.Size-back, 0), back)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	return parse.SanitizeLineString(lines[len(lines)-1], 300)
}

// refuseWriters fails, naming the process, while a worker runs or any
// process other than except writes the worker's files.
func (a Actor) refuseWriters(ctx context.Context, except int) error {
	if pid, alive, err := a.ourWorker(ctx); err != nil {
		return err
	} else if alive && pid != except {
		return fmt.Errorf("%w (pid %d): kill it first, or use resume after it stopped", ErrRunning, pid)
	}
	ws, err := a.procs().Writers(ctx, a.workerLog())
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			return err
		}
		return fmt.Errorf("cannot tell whether another process writes the files: %w", err)
	}
	for _, p := range ws {
		if p.PID() != except {
			return fmt.Errorf("%w: pid %d (%s) writes %s: stop it first (synthwatch kill --pid %d)", ErrRunning, p.PID(), p.Command(), p.Writes(), p.PID())
		}
	}
	return nil
}

// ourWorker reads worker.json's pid and checks it on the host.
func (a Actor) ourWorker(ctx context.Context) (int, bool, error) {
	ask := a.wjson
	if !a.standing() {
		ask = nil // read anew after an act
	}
	data, err := liveness.ReadCat(ctx, a.H, ask, a.layout().WorkerJSON(), 4<<20)
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			return 0, false, err
		}
		return 0, false, nil // no worker.json: none of ours has run here
	}
	st, err := parse.ParseWorkerState(data)
	if err != nil || st.PID <= 0 {
		return 0, false, nil
	}
	alive, err := a.isWorker(ctx, st.PID)
	return st.PID, alive, err
}

// runningWorker is the worker to stop: worker.json's live pid, or else the
// process that writes the worker log or a category file (a worker without
// worker.json, such as the old Python script under nohup).
func (a Actor) runningWorker(ctx context.Context) (int, bool, error) {
	pid, alive, err := a.ourWorker(ctx)
	if err != nil || alive {
		return pid, alive, err
	}
	ws, err := a.procs().Writers(ctx, a.workerLog())
	if err != nil || len(ws) == 0 {
		if errors.Is(err, remote.ErrDisconnected) {
			return 0, false, err
		}
		return 0, false, nil
	}
	return ws[0].PID(), true, nil
}

// isWorker checks /proc/PID: alive, and really our worker for this root
// (however its --root is spelt).
func (a Actor) isWorker(ctx context.Context, pid int) (bool, error) {
	p, err := a.procs().Read(ctx, pid)
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			return false, err
		}
		return false, nil
	}
	return p != nil && p.IsWorker(), nil
}

// killable: our worker, or a process writing the worker's files (nil:
// neither).
func (a Actor) killable(ctx context.Context, pid int) (*liveness.Proc, error) {
	p, err := a.procs().Read(ctx, pid)
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			return nil, err
		}
		return nil, nil
	}
	if p != nil && p.IsWorker() {
		return p, nil
	}
	ws, err := a.procs().Writers(ctx, a.workerLog())
	if err != nil {
		if errors.Is(err, remote.ErrDisconnected) {
			return nil, err
		}
		return nil, nil
	}
	for _, w := range ws {
		if w.PID() == pid {
			return w, nil
		}
	}
	return nil, nil
}

// KillGrace is kill's and restart's default wait between SIGTERM and
// SIGKILL: longer than the worker's own drain (worker.DefaultGrace, 30 s,
// the wait for requests in flight after a stop request; a test holds the
// two apart), so a worker that drains and saves in time ends "gone", its
// last records kept, never "killed" in the middle of its last write.
const KillGrace = 45 * time.Second

// killScript leaves the kill note (parse.KillNoteFormat, written whole: a
// temporary file renamed) and a marker line in the worker log, then sends
// SIGTERM to the worker's process group, waits up to the grace for it to
// go, then sends SIGKILL. It prints "gone" or "killed"
// (remote/host/kill.sh).
var killScript = remote.HostScript("kill.sh")

// KillArgv is the exact command a kill runs on the host. Before it
// signals, it writes the kill note (note: ROOT/run/synthwatch-kill) for
// pid and its start time, and appends a kill marker to the worker log
// (log), so every watcher knows the pid was stopped on purpose, not crashed.
func KillArgv(pid int, start uint64, grace time.Duration, log, note string) []string {
	return []string{"sh", "-c", killScript, "synthwatch-kill", strconv.Itoa(pid), strconv.Itoa(int(grace.Seconds() + 0.5)), log,
		strconv.FormatUint(start, 10), note, parse.KillNoteFormat, parse.FormatKill(pid, grace)}
}

// Kill stops the worker whose pid was fixed when the user asked (pid > 0),
// or the one running (pid == 0): worker.json's, or the process writing the
// worker's files. It refuses a pid that is neither our worker nor such a
// writer. It returns how it ended: "gone" (after SIGTERM) or "killed".
func (a Actor) Kill(ctx context.Context, pid int, grace time.Duration) (string, error) {
	a = a.checked(ctx, false)
	defer a.acted()
	how, _, err := a.kill(ctx, pid, grace)
	return how, err
}

func (a Actor) kill(ctx context.Context, pid int, grace time.Duration) (string, *liveness.Proc, error) {
	if pid <= 0 {
		p, alive, err := a.runningWorker(ctx)
		if err != nil {
			return "", nil, err
		}
		if !alive {
			return "", nil, errors.New("no worker is running")
		}
		pid = p
	}
	p, err := a.killable(ctx, pid)
	if err != nil {
		return "", nil, err
	} else if p == nil {
		return "", nil, fmt.Errorf("pid %d is not a running synthwatch worker nor writes the worker's files (already gone?)", pid)
	}
	ctx, cancel := context.WithTimeout(ctx, grace+30*time.Second)
	defer cancel()
	a.acted()
	r, err := a.H.Exec(ctx, KillArgv(pid, p.Start(), grace, a.workerLog(), a.layout().KillNote())...)
	if err != nil {
		return "", p, fmt.Errorf("kill %d: %w", pid, err)
	}
	how := strings.TrimSpace(string(r.Stdout))
	if q, _ := a.procs().Read(ctx, pid); q != nil && q.Start() == p.Start() {
		return how, p, fmt.Errorf("pid %d is still alive after SIGKILL", pid)
	}
	return how, p, nil
}

// Restarted is what a restart did.
type Restarted struct {
	PID        int    // the new worker
	Stopped    int    // the process it stopped (0: none ran)
	StoppedCmd string // its command line
	How        string // how it ended: gone | killed
}

// Restart stops the worker, then launches it with cat first and the other
// categories after it, in order. It checks first that a launch can start
// (Preflight), so a restart that cannot launch leaves the job running.
// Only a synthwatch worker is stopped unasked: a process that merely
// writes the worker's files (an old Python script, or something else) is
// stopped only when the caller names its pid (pid > 0), as kill --pid.
func (a Actor) Restart(ctx context.Context, cat string, all []string, grace time.Duration, pid int) (Restarted, error) {
	a = a.checked(ctx, true)
	defer a.acted()
	var res Restarted
	found := false
	for _, c := range all {
		found = found || c == cat
	}
	if !found {
		return res, fmt.Errorf("restart: no category %q", cat)
	}
	var target *liveness.Proc
	if pid > 0 {
		p, err := a.killable(ctx, pid)
		if err != nil {
			return res, fmt.Errorf("restart: %w", err)
		}
		if p == nil {
			return res, fmt.Errorf("restart: pid %d is not a running synthwatch worker nor writes the worker's files (already gone?)", pid)
		}
		target = p
	} else {
		wpid, alive, err := a.ourWorker(ctx)
		if err != nil {
			return res, fmt.Errorf("restart: %w", err)
		}
		if alive {
			target, _ = a.procs().Read(ctx, wpid)
		}
	}
	except := 0
	if target != nil {
		except = target.PID()
	}
	if err := a.refuseWriters(ctx, except); err != nil { // a writer besides the one to restart
		if pid <= 0 && errors.Is(err, ErrRunning) {
			err = fmt.Errorf("%w; it is not a synthwatch worker: restart --pid PID stops it and starts the worker", err)
		}
		return res, fmt.Errorf("restart: %w", err)
	}
	if err := a.Preflight(ctx); err != nil {
		if target != nil {
			err = fmt.Errorf("%w (pid %d left running)", err, target.PID())
		}
		return res, fmt.Errorf("restart: %w", err)
	}
	if target != nil {
		how, p, err := a.kill(ctx, target.PID(), grace)
		if err != nil {
			return res, fmt.Errorf("restart: %w", err)
		}
		res.Stopped, res.StoppedCmd, res.How = p.PID(), p.Command(), how
	}
	order := []string{cat}
	for _, c := range all {
		if c != cat {
			order = append(order, c)
		}
	}
	var err error
	res.PID, err = a.Launch(ctx, order)
	return res, err
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/actions"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/tui"
	"golang.org/x/term"
)

// Exit codes, documented in --help, the README and docs/HOSTS.md.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitConnect = 3
	exitHostKey = 4
	// exitCategoriesFailed: the worker went through every category and
	// some failed (its log names them)
	exitCategoriesFailed = 5
)

const exitCodesHelp = `
Exit codes: 0 success; 1 the action failed; 2 usage error;
3 cannot connect or authenticate; 4 host key unknown or changed.`

type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func usageErr(err error) error  { return &exitError{exitUsage, err} }
func actionErr(err error) error { return &exitError{exitFailed, err} }

// connectErr gives a connection error its exit code: 4 for host keys.
func connectErr(err error) error {
	var hk *remote.HostKeyError
	if errors.As(err, &hk) {
		return &exitError{exitHostKey, err}
	}
	return &exitError{exitConnect, err}
}

// linkErr is how a link ends a command, by docs/HOSTS.md's exit codes: nil
// while it reached its host and has not failed for good; else connectErr
// of its last failure (4 for a host key unknown or changed, 3 for the
// rest). status --follow and the dashboards (one host, or the fleet) exit
// by it, as one-shot status exits by connectErr of its dial.
func linkErr(name string, c snapshot.Connection) error {
	never := c.Linked() && c.LastContact == nil
	if c.State != snapshot.LinkFailed && !never {
		return nil
	}
	cause := c.Cause
	switch {
	case cause != nil:
	case c.Error != "":
		cause = errors.New(c.Error)
	default:
		cause = errors.New("no answer yet")
	}
	if c.State == snapshot.LinkFailed {
		return connectErr(fmt.Errorf("the link to %s failed for good: %w", name, cause))
	}
	return connectErr(fmt.Errorf("%s was never reached: %w", name, cause))
}

// quietError is an error the command has already told (the dashboard's
// quit message): main gives its exit code and prints nothing more.
type quietError struct{ error }

func (q quietError) Unwrap() error { return q.error }
func (quietError) Quiet() bool     { return true }

// hostFlags are OpenSSH's flags plus the pipeline root. The settings
// (root, server URL, ...) are resolved from them, the environment and
// config.toml by resolve.
type hostFlags struct {
	port       int
	identities []string
	config     string
	jump       string
	opts       []string
	root       string
	local      string
	serverURL  string
	workerBin  string
	noInstall  bool
	set        settings
	stateDir   string // if set, the event history and the log go here, not in ~/.local/state (the demo)
}

func (f *hostFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVarP(&f.port, "port", "p", 0, "ssh port")
	fl.StringArrayVarP(&f.identities, "identity", "i", nil, "identity file (repeatable)")
	fl.StringVarP(&f.config, "config", "F", "", "ssh config file")
	fl.StringVarP(&f.jump, "jump", "J", "", "ProxyJump host(s), comma-separated")
	fl.StringArrayVarP(&f.opts, "option", "o", nil, "ssh option Key=Value (repeatable)")
	f.addSettings(cmd)
	fl.StringVar(&f.local, "local", "", "read a pipeline root on this machine instead of over SSH")
}

// command is "synthwatch SUB" with the flags that reached this host (and
// --worker-bin), then name: advice the user can paste as it is.
func (f *hostFlags) command(sub, name string) string {
	out := []string{"synthwatch", sub}
	if f.port > 0 {
		out = append(out, "-p", strconv.Itoa(f.port))
	}
	for _, i := range f.identities {
		out = append(out, "-i", remote.Quote(i))
	}
	if f.config != "" {
		out = append(out, "-F", remote.Quote(f.config))
	}
	if f.jump != "" {
		out = append(out, "-J", remote.Quote(f.jump))
	}
	for _, o := range f.opts {
		out = append(out, "-o", remote.Quote(o))
	}
	if f.workerBin != "" {
		out = append(out, "--worker-bin", remote.Quote(f.workerBin))
	}
	return strings.Join(append(out, remote.Quote(name)), " ")
}

// addSettings adds the flags that outrank config.toml.
func (f *hostFlags) addSettings(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.root, "root", pipeline.DefaultRoot, "pipeline root on the host (env SYNTHWATCH_ROOT, config.toml root)")
	fl.StringVar(&f.serverURL, "server-url", parse.DefaultServerURL, "the server's URL as seen from the host (env SYNTHWATCH_SERVER_URL, config.toml server_url)")
	fl.StringVar(&f.workerBin, "worker-bin", "", "worker binary on the host (default: synthwatch on PATH, then ~/.local/bin/synthwatch)")
	fl.BoolVar(&f.noInstall, "no-install", false, "never copy the agent to the host's ~/.cache/synthwatch/agent: a shell script reads (env SYNTHWATCH_NO_INSTALL, config.toml no_install)")
}

// resolve settles every setting for the command's host, once.
func (f *hostFlags) resolve(cmd *cobra.Command, args []string) error {
	host := ""
	if f.local == "" && len(args) == 1 {
		host = args[0]
	}
	s, err := resolveSettings(cmd.Flags(), host, os.Getenv)
	if err != nil {
		return err
	}
	if f.local != "" {
		s.override("root", f.local, "flag --local")
	}
	f.set = s
	f.root, f.serverURL, f.workerBin, f.noInstall = s.Root, s.ServerURL, s.WorkerBin, s.NoInstall
	return nil
}

// connect resolves the settings and opens the host: local, or SSH to the
// one positional target.
func (f *hostFlags) connect(cmd *cobra.Command, args []string) (remote.Host, string, error) {
	if f.local != "" && len(args) > 0 {
		return nil, "", usageErr(errors.New("--local takes no host"))
	}
	if f.local == "" && len(args) != 1 {
		return nil, "", usageErr(errors.New("give one host: [user@]host[:port] or an ssh config alias"))
	}
	if err := f.resolve(cmd, args); err != nil {
		return nil, "", err
	}
	if f.local != "" {
		return remote.Local{GoSums: true}, "local", nil
	}
	o := remote.Options{Target: args[0], Port: f.port, Identities: f.identities, ConfigFile: f.config, Jump: f.jump, Opts: f.opts, Prompt: termPrompt()}
	ctx, cancel := context.WithTimeout(cmd.Context(), 60*time.Second)
	defer cancel()
	h, err := remote.Dial(ctx, o)
	if err != nil {
		return nil, "", connectErr(err)
	}
	return h, args[0], nil
}

// connectRoot is connect for a command that reads or steers the pipeline:
// the root must be one (have prepared/), or the command exits 1 saying so.
func (f *hostFlags) connectRoot(cmd *cobra.Command, args []string) (remote.Host, string, error) {
	h, name, err := f.connect(cmd, args)
	if err != nil {
		return nil, "", err
	}
	if err := f.checkRoot(cmd.Context(), h, name); err != nil {
		h.Close()
		return nil, "", err
	}
	return h, name, nil
}

// onHost is how a subcommand works on the host: it resolves the settings,
// connects (with root, to a pipeline root: connectRoot), runs do with the
// host and the name it was reached by, and closes the link after it. The
// errors of resolving and connecting keep their exit codes (2, 3, 4, or 1
// for a root that is none); so does an error of do that chose one, and
// any other error of do is 1, the action failed. A command whose context
// ended while it connected (status --follow on a signal) was interrupted:
// nothing is printed and nothing is wrong.
func (f *hostFlags) onHost(cmd *cobra.Command, args []string, root bool, do func(ctx context.Context, h remote.Host, name string) error) error {
	connect := f.connect
	if root {
		connect = f.connectRoot
	}
	h, name, err := connect(cmd, args)
	if err != nil {
		if cmd.Context().Err() != nil {
			return nil
		}
		return err
	}
	defer h.Close()
	err = do(cmd.Context(), h, name)
	var ec exitCoder
	if err != nil && !errors.As(err, &ec) {
		return actionErr(err)
	}
	return err
}

// checkRoot says when the root has no prepared/ directory, naming the root,
// where the value came from and how to set it.
func (f *hostFlags) checkRoot(ctx context.Context, h remote.Host, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := checkRoot(ctx, h, f.root, name, f.set.HostFrom)
	var re *rootError
	if errors.As(err, &re) {
		re.origin = f.set.Get("root").Origin
		return actionErr(err)
	}
	if err != nil {
		return connectErr(err)
	}
	return nil
}

// checkFound is what a poll that found no category says: the root is no
// pipeline root (no prepared/, a rootError), or prepared/ holds no category
// (a noCategoriesError); both exit 1, never an empty table with exit 0.
// The root is checked only when the poll found nothing in it: checked
// first, its round trips (an SFTP session and a stat) came before the
// poll's on every run. A poll the link failed under says nothing of the
// root.
func (f *hostFlags) checkFound(ctx context.Context, h remote.Host, name string, snap snapshot.Snapshot) error {
	if len(snap.Categories) > 0 {
		return nil
	}
	if err := f.checkRoot(ctx, h, name); err != nil {
		return err
	}
	if snap.Connection.Stale() {
		return nil
	}
	return actionErr(&noCategoriesError{root: f.root, host: name})
}

// noCategoriesError is a pipeline root whose prepared/ names no category
// (and no pipeline.toml or worker.json does): nothing to watch yet.
type noCategoriesError struct {
	root, host string
}

func (e *noCategoriesError) Error() string {
	where := "on " + e.host
	if e.host == "local" || e.host == "" {
		where = "on this machine"
	}
	lay := parse.Layout{Root: e.root}
	return fmt.Sprintf("no categories in %s %s: expected a folder per category there, each with its prompts (%s)",
		lay.Prepared(), where, lay.Prompts("<category>"))
}

// writeJSONError is status --json's answer when there is no Snapshot:
// {"error", "exit_code"}, as a fleet's host gives it, never an empty list.
func writeJSONError(out io.Writer, err error) {
	enc := json.NewEncoder(termSafe{out})
	enc.SetIndent("", "  ")
	_ = enc.Encode(hostError{Error: err.Error(), ExitCode: exitCode(err)})
}

// rootError is a root with no prepared/ directory: a mistyped --root, or
// the default root on a host that keeps the pipeline elsewhere.
type rootError struct {
	root, host, section, origin string
}

func (e *rootError) Error() string {
	where := "on " + e.host
	if e.host == "local" || e.host == "" {
		where = "on this machine"
	}
	msg := fmt.Sprintf("%s%s %s (no prepared/ directory)", tui.RootWarning, e.root, where)
	switch e.origin {
	case "":
	case "default":
		msg += "; that is the default root"
	default:
		msg += "; the root came from " + e.origin
	}
	section := e.section
	if section == "" {
		section = e.host
	}
	if e.host == "local" || e.host == "" {
		return msg + `: give the right one with --local DIR`
	}
	return msg + fmt.Sprintf(`: set it with --root DIR, SYNTHWATCH_ROOT, root = "DIR" in %s, or root in its [hosts.%q] section`, configPath(), section)
}

// checkRoot stats ROOT/prepared on h.
func checkRoot(ctx context.Context, h remote.Host, root, host, section string) error {
	fi, err := h.Stat(ctx, parse.Layout{Root: root}.Prepared())
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir) {
		return &rootError{root: root, host: host, section: section}
	}
	if err != nil {
		return fmt.Errorf("check the root %s: %w", root, err)
	}
	return nil
}

// actor runs actions; a server URL that was set (flag, environment or
// config.toml) is passed on to a launched worker, which otherwise takes
// pipeline.toml's.
func (f *hostFlags) actor(h remote.Host) actions.Actor {
	a := actions.Actor{H: h, Root: f.root, WorkerBin: f.workerBin}
	if f.set.ServerSet { // on the launch's stdin, never in argv: it may hold a password
		a.ServerURL = f.serverURL
	}
	return a
}

// ttyPrompt asks on the terminal; without one, nothing is asked and the
// caller's refusal stands.
type ttyPrompt struct{}

func termPrompt() remote.Prompter {
	if !term.IsTerminal(int(os.Stdin.Fd())) || !term.IsTerminal(int(os.Stderr.Fd())) {
		return nil
	}
	return ttyPrompt{}
}

// ttyMu keeps the terminal's questions one at a time: the hosts of a fleet
// connect in parallel.
var ttyMu sync.Mutex

func (ttyPrompt) ConfirmHostKey(host, fp, keyType string) (bool, error) {
	ttyMu.Lock()
	defer ttyMu.Unlock()
	fmt.Fprintf(os.Stderr, "The host %s is not known.\n%s key fingerprint is %s.\nTrust it and add it to known_hosts? [y/N] ", host, keyType, fp)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

func (ttyPrompt) Passphrase(keyFile string) ([]byte, error) {
	ttyMu.Lock()
	defer ttyMu.Unlock()
	fmt.Fprintf(os.Stderr, "Passphrase for %s: ", keyFile)
	defer fmt.Fprintln(os.Stderr)
	return term.ReadPassword(int(os.Stdin.Fd()))
}

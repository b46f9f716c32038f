package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/remote"
	"golang.org/x/term"
)

// Exit codes, documented in --help and the README.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitConnect = 3
	exitHostKey = 4
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

// hostFlags are OpenSSH's flags plus the pipeline root.
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
}

func (f *hostFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVarP(&f.port, "port", "p", 0, "ssh port")
	fl.StringArrayVarP(&f.identities, "identity", "i", nil, "identity file (repeatable)")
	fl.StringVarP(&f.config, "config", "F", "", "ssh config file")
	fl.StringVarP(&f.jump, "jump", "J", "", "ProxyJump host(s), comma-separated")
	fl.StringArrayVarP(&f.opts, "option", "o", nil, "ssh option Key=Value (repeatable)")
	fl.StringVar(&f.root, "root", pipeline.DefaultRoot, "pipeline root on the host")
	fl.StringVar(&f.local, "local", "", "read a pipeline root on this machine instead of over SSH")
	fl.StringVar(&f.serverURL, "server-url", "http://127.0.0.1:30000", "the server's URL as seen from the host")
	fl.StringVar(&f.workerBin, "worker-bin", "", "worker binary on the host (default: synthwatch on PATH, then ~/.local/bin/synthwatch)")
}

// connect opens the host: local, or SSH to the one positional target.
func (f *hostFlags) connect(ctx context.Context, args []string) (remote.Host, string, error) {
	if f.local != "" {
		if len(args) > 0 {
			return nil, "", usageErr(errors.New("--local takes no host"))
		}
		f.root = f.local
		return remote.Local{}, "local", nil
	}
	if len(args) != 1 {
		return nil, "", usageErr(errors.New("give one host: [user@]host[:port] or an ssh config alias"))
	}
	o := remote.Options{Target: args[0], Port: f.port, Identities: f.identities, ConfigFile: f.config, Jump: f.jump, Opts: f.opts, Prompt: termPrompt()}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	h, err := remote.Dial(ctx, o)
	if err != nil {
		return nil, "", connectErr(err)
	}
	return h, args[0], nil
}

// actor runs actions; a --server-url given on the command line is passed on
// to a launched worker, which otherwise takes pipeline.toml's.
func (f *hostFlags) actor(cmd *cobra.Command, h remote.Host) pipeline.Actor {
	a := pipeline.Actor{H: h, Root: f.root, WorkerBin: f.workerBin}
	if cmd.Flags().Changed("server-url") {
		a.Extra = []string{"--server", f.serverURL}
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

func (ttyPrompt) ConfirmHostKey(host, fp, keyType string) (bool, error) {
	fmt.Fprintf(os.Stderr, "The host %s is not known.\n%s key fingerprint is %s.\nTrust it and add it to known_hosts? [y/N] ", host, keyType, fp)
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

func (ttyPrompt) Passphrase(keyFile string) ([]byte, error) {
	fmt.Fprintf(os.Stderr, "Passphrase for %s: ", keyFile)
	defer fmt.Fprintln(os.Stderr)
	return term.ReadPassword(int(os.Stdin.Fd()))
}

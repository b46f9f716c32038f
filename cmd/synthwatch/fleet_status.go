package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// hostResult is one host's answer to status: its Snapshot, or why there
// is none (with the exit code that host alone would have given).
type hostResult struct {
	snap *snapshot.Snapshot
	err  error
}

// hostError is a host's entry in status --json when it gave no Snapshot.
type hostError struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

func exitCode(err error) int {
	var ec exitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	if err != nil {
		return exitFailed
	}
	return exitOK
}

// entry is what status --json prints for a host.
func (r hostResult) entry() any {
	if r.err != nil {
		return hostError{Error: r.err.Error(), ExitCode: exitCode(r.err)}
	}
	return r.snap
}

// statusFleet is status for several hosts: each connects and polls on its
// own, in parallel, so a slow host delays no other's answer but only the
// printing at the end. The exit code is the worst (highest) host's.
func statusFleet(cmd *cobra.Command, hosts []string, f *hostFlags, asJSON bool) error {
	res := make([]hostResult, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Go(func() {
			hf := *f
			res[i].err = hf.onHost(cmd, []string{host}, true, func(ctx context.Context, h remote.Host, name string) error {
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				w := hf.watcher(h, name, true)
				s := w.Poll(ctx)
				defer finishInstall(ctx, w) // a first contact's copy: the next status finds the agent
				if err := hf.checkFound(ctx, h, name, s); err != nil {
					return err
				}
				res[i].snap = &s
				return nil
			})
			if res[i].err == nil && res[i].snap == nil { // interrupted while connecting
				res[i].err = errors.New("interrupted")
			}
		})
	}
	wg.Wait()
	out := cmd.OutOrStdout()
	if asJSON {
		if err := writeKeyed(out, hosts, res); err != nil {
			return actionErr(err)
		}
	} else {
		for i, r := range res {
			fmt.Fprintf(out, "=== %s\n", hosts[i])
			if r.err != nil {
				fmt.Fprintf(out, "error: %v\n", r.err)
				continue
			}
			printStatus(out, *r.snap)
		}
	}
	return worst(hosts, res)
}

// writeKeyed prints one JSON object keyed by host, in the order given (a
// Go map would sort them).
func writeKeyed(out io.Writer, hosts []string, res []hostResult) error {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, r := range res {
		k, _ := json.Marshal(hosts[i])
		v, err := json.MarshalIndent(r.entry(), "  ", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", hosts[i], err)
		}
		fmt.Fprintf(&b, "  %s: %s", escapeTermUnsafe(k), escapeTermUnsafe(v))
		if i < len(res)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	_, err := out.Write(b.Bytes())
	return err
}

// worst is the error of the host with the highest exit code, naming how
// many hosts failed; nil when none did.
func worst(hosts []string, res []hostResult) error {
	code, failed, first := exitOK, 0, ""
	for i, r := range res {
		if r.err == nil {
			continue
		}
		failed++
		if c := exitCode(r.err); c > code {
			code, first = c, fmt.Sprintf("%s: %v", hosts[i], r.err)
		}
	}
	if failed == 0 {
		return nil
	}
	return &exitError{code, fmt.Errorf("%d of %d hosts failed; the worst, %s", failed, len(hosts), first)}
}

// lockedWriter makes each Write whole: hosts following in parallel never
// interleave their lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// statusFollowFleet is status --follow for several hosts: each host polls
// on its own link and prints a line (--json: {"HOST": Snapshot}) per poll
// as it comes, so a black-holed host holds up nobody's lines. A host that
// cannot be reached prints {"HOST": {"error", "exit_code"}} once; the
// others go on. The exit code is the worst host's.
func statusFollowFleet(cmd *cobra.Command, hosts []string, f *hostFlags, asJSON bool, count int) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cmd.SetContext(ctx)
	out := &lockedWriter{w: cmd.OutOrStdout()}
	res := make([]hostResult, len(hosts))
	var wg sync.WaitGroup
	for i, host := range hosts {
		wg.Go(func() {
			hf := *f
			err := hf.onHost(cmd, []string{host}, true, func(ctx context.Context, h remote.Host, name string) error {
				return followSnapshots(ctx, out, hf.watcher(h, name, false), name, hf.set.Poll, asJSON, count, name)
			})
			res[i].err = err
			if err == nil {
				return
			}
			if asJSON {
				line, _ := json.Marshal(map[string]any{host: res[i].entry()})
				out.Write(append(escapeTermUnsafe(line), '\n'))
			} else {
				fmt.Fprintf(out, "--- %s %s\nerror: %v\n", time.Now().Format("2006-01-02 15:04:05"), host, err)
			}
		})
	}
	wg.Wait()
	return worst(hosts, res)
}

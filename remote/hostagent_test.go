package remote

import (
	"context"
	"errors"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testbin"
)

// The test binary is the deployed synthwatch too: run with
// SW_TEST_AGENT=1 and "agent ...", it is the Go agent, as "synthwatch
// agent" is, so the launcher finds and probes it as it would the real one.
func TestMain(m *testing.M) {
	// "agent" as the first argument is never a test flag: an installed copy
	// of this binary (install_test.go) is run so, with no environment of ours
	if len(os.Args) >= 2 && os.Args[1] == "agent" {
		os.Exit(AgentMain(os.Args[2:], os.Stdin, os.Stdout, nil))
	}
	os.Exit(m.Run())
}

// goAgent is an agent whose host finds a deployed binary that speaks its
// protocol: the test binary (TestMain).
func goAgent(t *testing.T) *Agent {
	t.Helper()
	ag := NewAgent(Local{})
	ag.UseBinary(selfAsBinary(t)) // the environment is the script's, not the test's: tests run in parallel
	t.Cleanup(ag.Close)
	return ag
}

// selfAsBinary is a deployed synthwatch as a host finds it through any
// link (sshd passes no SW_TEST_AGENT): a script that runs the test binary
// as the Go agent.
func selfAsBinary(t testing.TB) string {
	t.Helper()
	self, err := os.Executable()
	must(t, err)
	p := filepath.Join(t.TempDir(), "synthwatch")
	writeFile(t, p, "#!/bin/sh\nSW_TEST_AGENT=1 exec '"+self+"' \"$@\"\n")
	must(t, os.Chmod(p, 0o755))
	return p
}

// both are the agents a host may run: today the Go agent alone (the shell
// agent is gone; the fallback is the one-shot batch the tests compare with).
func both(t *testing.T) map[string]*Agent {
	return map[string]*Agent{"go": goAgent(t)}
}

// goAgentRuns says whether ag's agent is the Go one ("BIN agent NONCE").
func goAgentRuns(t *testing.T, ag *Agent) bool {
	t.Helper()
	ag.mu.Lock()
	nonce := ag.nonce
	ag.mu.Unlock()
	return testbin.AgentRuns("", nonce)
}

// The launcher runs the deployed binary when it speaks the protocol, and
// none when it does not (an older build, another program, nothing): the
// fallback reads, and the kind says why.
func TestAgentLauncherPicksTheBinary(t *testing.T) {
	t.Parallel()
	ag := goAgent(t)
	b := &Batch{}
	b.Cat("/proc/stat", 100)
	if _, err := ag.Run(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if !goAgentRuns(t, ag) {
		t.Fatal("the launcher did not run the binary that speaks the protocol")
	}
	if self, _ := os.Executable(); ag.Kind() != "go "+self {
		t.Errorf("kind %q, want go %s", ag.Kind(), self)
	}

	dir := t.TempDir()
	for name, script := range map[string]string{
		"old":   "#!/bin/sh\necho 'unknown flag: --proto' >&2; exit 1\n",
		"other": "#!/bin/sh\necho 0123456789ab\n",
	} {
		p := filepath.Join(dir, name)
		writeFile(t, p, script)
		must(t, os.Chmod(p, 0o755))
		sh := NewAgent(Local{})
		sh.UseBinary(p)
		t.Cleanup(sh.Close)
		if _, err := sh.Run(context.Background(), b); !errors.Is(err, ErrNoAgent) {
			t.Fatalf("%s binary: %v, want no agent (the fallback reads)", name, err)
		}
		if goAgentRuns(t, sh) {
			t.Fatalf("%s binary: run as the agent", name)
		}
		// the fallback reads, and says why not the binary: once, as the agent's kind
		if k := sh.Kind(); !strings.HasPrefix(k, "fallback (") || !strings.Contains(k, p) || !strings.Contains(k, AgentProto) {
			t.Errorf("%s binary: kind %q, want the fallback naming the binary and the protocol", name, k)
		}
	}
	none := NewAgent(Local{})
	none.UseBinary(filepath.Join(dir, "absent"))
	t.Cleanup(none.Close)
	if _, err := none.Run(context.Background(), b); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("no binary: %v", err)
	}
	if k := none.Kind(); k != "fallback" {
		t.Errorf("no binary: kind %q, want fallback", k)
	}
}

// A command that leaves a job in the background answers when it exits, as
// the shell's redirection to a file does: the job holds up nothing (from
// the adversarial trial: the Go agent waited for the job's pipes).
func TestAgentExecLeavesItsJob(t *testing.T) {
	t.Parallel()
	for kind, ag := range both(t) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		b := &Batch{}
		ask := b.Exec("sh", "-c", `sleep 60 & echo $! >"$1"; echo started`, "x", pidFile)
		if _, err := ag.Run(context.Background(), b); err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if x, ok := ask.Result(); !ok || string(x.Stdout) != "started\n" || x.ExitCode != 0 {
			t.Fatalf("%s: %+v", kind, x)
		}
		pid, err := os.ReadFile(pidFile)
		must(t, err)
		// the answer came while the job still runs
		if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err != nil {
			t.Fatalf("%s: the job had ended before the answer came", kind)
		}
		exec.Command("kill", strings.TrimSpace(string(pid))).Run()
	}
}

// A binary that hangs when asked its protocol is left for the shell once
// timeout(1) ends the question: no agent runs, and the kind says why.
func TestAgentLauncherHungBinary(t *testing.T) {
	testgate.E2E(t) // it waits out timeout(1)'s 10 s: CI's end-to-end run
	t.Parallel()
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatal("timeout(1) not found (coreutils): the launcher asks without a limit")
	}
	bin := filepath.Join(t.TempDir(), "synthwatch")
	writeFile(t, bin, "#!/bin/sh\nexec sleep 600\n")
	must(t, os.Chmod(bin, 0o755))
	ag := NewAgent(Local{})
	ag.UseBinary(bin)
	t.Cleanup(ag.Close)
	b := &Batch{}
	b.Cat("/proc/stat", 100)
	if _, err := ag.Run(context.Background(), b); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("after the hung question: %v, want no agent (the fallback reads)", err)
	}
	if k := ag.Kind(); !strings.Contains(k, "answers nothing to agent --proto") {
		t.Errorf("kind %q: the hung binary is not named", k)
	}
	if goAgentRuns(t, ag) {
		t.Fatal("the hung binary runs as the agent")
	}
}

// isWord and isNumber are the regexps they replace, on every short string
// of a few interesting bytes and on long ones.
func TestEncodeClassesMatchTheRegexps(t *testing.T) {
	t.Parallel()
	word := regexp.MustCompile(`^[A-Za-z0-9_.,:=+-]{1,64}$`)
	number := regexp.MustCompile(`^-?[0-9]+$`)
	alphabet := []string{"", "a", "Z", "0", "9", "-", "_", ".", ",", ":", "=", "+", "/", " ", "'", "$", "\n", "é", "\x00"}
	var cases []string
	for _, a := range alphabet {
		for _, b := range alphabet {
			for _, c := range alphabet {
				cases = append(cases, a+b+c)
			}
		}
	}
	cases = append(cases, strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("7", 100), "-"+strings.Repeat("7", 100), "--1", "1-")
	for _, s := range cases {
		if isWord(s) != word.MatchString(s) || isNumber(s) != number.MatchString(s) {
			t.Errorf("%q: word %v number %v, the regexps say %v %v", s, isWord(s), isNumber(s), word.MatchString(s), number.MatchString(s))
		}
	}
}

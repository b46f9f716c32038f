package remote

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The platform an agent named in its hello is what the next launcher is
// told (the hint a status keeps between runs): it runs the agent of that
// platform's place without a uname, and a platform whose agent does not
// start (a home shared with a host of another arch) costs one poll by
// the fallback, not the session: the next launch asks uname.
func TestAgentPlatformSparesUname(t *testing.T) {
	t.Parallel()
	_, h, home := sshdHome(t)
	ag := installingAgent(t, h)
	waitInstalled(t, ag)
	if _, err := ag.Run(context.Background(), loadBatch()); err != nil {
		t.Fatal(err)
	}
	want := runtime.GOOS + "-" + runtime.GOARCH
	if p := ag.Platform(); p != want {
		t.Fatalf("after the agent's hello the platform is %q, want %q", p, want)
	}

	// the agent copied to another platform's place: told that platform,
	// the launcher runs it from there, which only the told one names
	bin, err := os.ReadFile(filepath.Join(agentDir(home), "synthwatch"))
	if err != nil {
		t.Fatal(err)
	}
	place := func(p string) string {
		return filepath.Join(home, ".cache", "synthwatch", "agent", strings.TrimPrefix(AgentProto, "synthwatch-agent/")+"-"+p)
	}
	must(t, os.MkdirAll(place("linux-riscv64"), 0o700))
	must(t, os.WriteFile(filepath.Join(place("linux-riscv64"), "synthwatch"), bin, 0o700))
	told := NewAgent(h)
	t.Cleanup(told.Close)
	told.SetPlatform("linux-riscv64")
	if _, err := told.Run(context.Background(), loadBatch()); err != nil {
		t.Fatal(err)
	}
	if k := told.Kind(); !strings.Contains(k, "-linux-riscv64/synthwatch") {
		t.Fatalf("told linux-riscv64, the poll was read by %q", k)
	}
	if p := told.Platform(); p != want {
		t.Errorf("the hello named %q; the agent keeps %q", want, p)
	}

	// a platform whose agent cannot run here: that poll has no agent, the
	// session keeps trying, and the next launch finds this host's
	must(t, os.MkdirAll(place("linux-mips64"), 0o700))
	must(t, os.WriteFile(filepath.Join(place("linux-mips64"), "synthwatch"), []byte("\x7fELF\x02\x01\x01 not this host's\n"), 0o700))
	wrong := NewAgent(h)
	t.Cleanup(wrong.Close)
	wrong.SetPlatform("linux-mips64")
	if _, err := wrong.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) {
		t.Fatalf("an agent that cannot start: %v", err)
	}
	if !wrong.Usable() || wrong.Platform() != "" {
		t.Fatalf("after the told agent failed: usable %v, platform %q; want usable, none", wrong.Usable(), wrong.Platform())
	}
	if _, err := wrong.Run(context.Background(), loadBatch()); err != nil {
		t.Fatal(err)
	}
	if k := wrong.Kind(); !strings.Contains(k, "-"+want+"/synthwatch") {
		t.Fatalf("the launch after: read by %q, want this host's agent", k)
	}

	// not a platform's word: never on the command line
	for _, bad := range []string{"linux", "linux-amd64; rm -rf ~", "../x-y", "Linux-amd64", "-amd64"} {
		told.SetPlatform(bad)
		if p := told.Platform(); p != "" {
			t.Errorf("SetPlatform(%q) kept %q", bad, p)
		}
	}
}

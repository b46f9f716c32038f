package remote

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// The agent keeps a report's stamps of the records files it summed, and
// of no other file: not before it has answered stampsFirst (a one-shot
// status never does), then at most every stampsEvery, one keep at a time,
// never while an answer waits.
func TestAgentKeepsTheReportsStampsOfWhatItSummed(t *testing.T) {
	first, every := stampsFirst, stampsEvery
	t.Cleanup(func() { stampsFirst, stampsEvery = first, every })
	dir := t.TempDir()
	var raws []string
	for _, c := range []string{"B1_glaive", "B2_opencodeinstruct"} {
		must(t, os.MkdirAll(filepath.Join(dir, c), 0o700))
		p := filepath.Join(dir, c, "raw_responses.jsonl")
		must(t, os.WriteFile(p, []byte(sumRecs(0, 40, "r")), 0o600))
		raws = append(raws, p)
	}
	other := filepath.Join(dir, "B1_glaive", "errors.jsonl")
	must(t, os.WriteFile(other, []byte(sumRecs(0, 5, "r")), 0o600))

	ts := &tokenSums{files: map[string]*sumState{}}
	if out, errb := ts.cold(dir, "raw_responses.jsonl", 0, nil); len(out) == 0 {
		t.Fatalf("no sums: %q", errb)
	}
	if _, err := ts.sum(other, 0, 1<<20, nil, nil); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var calls [][]string
	release := make(chan struct{})
	sp := newStamper(func(records []string) {
		mu.Lock()
		calls = append(calls, records)
		mu.Unlock()
		<-release
	})
	ncalls := func() int { mu.Lock(); defer mu.Unlock(); return len(calls) }

	stampsFirst, stampsEvery = time.Hour, time.Hour
	sp.after(ts)
	if ncalls() != 0 || sp.done != nil {
		t.Fatal("stamps kept before the agent answered stampsFirst: a one-shot status would pay for them")
	}
	stampsFirst = 0
	sp.after(ts)
	done := sp.done
	if done == nil {
		t.Fatal("no keep began once it was due")
	}
	sp.after(ts) // one under way: none more
	close(release)
	<-done
	if n := ncalls(); n != 1 {
		t.Fatalf("%d keeps for one due, want 1", n)
	}
	if !slices.Equal(calls[0], raws) {
		t.Fatalf("kept the stamps of %q, want the records summed %q and not errors.jsonl", calls[0], raws)
	}
	sp.after(ts)
	if ncalls() != 1 || sp.done != done {
		t.Fatal("a second keep within stampsEvery")
	}
	stampsEvery = 0
	sp.after(ts)
	<-sp.done
	if n := ncalls(); n != 2 {
		t.Fatalf("%d keeps once the next was due, want 2", n)
	}
	var none *stamper
	none.after(ts) // an agent with no keeper (a test's) keeps nothing
	newStamper(nil).after(ts)
}

// --no-install (the host must not be written): the launcher starts the
// agent with SYNTHWATCH_NO_INSTALL, under which its keeper (the agent
// command's keepStamps: digest's keepDir) keeps nothing, as report's
// digest keeps nothing under it; with installs allowed, it is not set.
func TestAgentStartedUnderNoInstallKeepsNothing(t *testing.T) {
	ag := NewAgent(Local{})
	t.Cleanup(ag.Close)
	env := func() string { // what the launcher's agent would see, from the argv the launcher gets
		argv := ag.startArgv("~00", []byte("req"))
		cmd := exec.Command("sh", append([]string{"-c", noInstallLine + `printf %s "${SYNTHWATCH_NO_INSTALL-}"`}, argv[3:]...)...)
		cmd.Env = append(os.Environ(), "SYNTHWATCH_NO_INSTALL=")
		out, err := cmd.Output()
		must(t, err)
		return string(out)
	}
	if got := env(); got != "1" {
		t.Fatalf("an agent that may not install is started with SYNTHWATCH_NO_INSTALL=%q", got)
	}
	ag.AutoInstall(true)
	if got := env(); got != "" {
		t.Fatalf("an agent that may install is started with SYNTHWATCH_NO_INSTALL=%q", got)
	}
}

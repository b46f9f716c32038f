package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testbin"
)

// The agent installed in the host's cache and the synthwatch deployed to
// ~/.local/bin are one build at two paths: stamps that one kept (the
// agent, for the records it sums: keepStamps) the other's digest replays,
// and says what a digest of every record says.
func TestStampsKeptByOneCopyReplayedByAnother(t *testing.T) {
	t.Parallel()
	bin := testbin.Path(t)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyAt := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name, "synthwatch")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	agent := copyAt("agent", time.Now().Add(-time.Hour))
	deployed := copyAt("deployed", time.Now())
	root := filepath.Join(dir, "root")
	digesttest.Night(t, root, time.Now(), digesttest.Options{})
	home := filepath.Join(dir, "home")
	run := func(bin string, env ...string) digest.Summary {
		t.Helper()
		cmd := exec.Command(bin, "digest", "--root", root, "--since", "24h")
		cmd.Env = append([]string{"HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"), "PATH=" + os.Getenv("PATH"), "TZ=UTC"}, env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s digest: %v", bin, err)
		}
		var s digest.Summary
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	whole := run(deployed, "SYNTHWATCH_NO_INSTALL=1")
	if whole.Read.Kept != 0 || whole.Read.Bytes == 0 {
		t.Fatalf("a digest that may keep nothing replayed %d bytes of %d", whole.Read.Kept, whole.Read.Bytes)
	}
	first := run(agent)
	if first.Read.Kept != 0 {
		t.Fatalf("the first digest replayed %d bytes: nothing was kept", first.Read.Kept)
	}
	second := run(deployed)
	if second.Read.Kept == 0 {
		t.Fatal("the deployed copy read every record again: the stamps its twin kept were not its own")
	}
	if !whole.Since.Equal(second.Since) { // an hour began between them: another window
		whole = run(deployed, "SYNTHWATCH_NO_INSTALL=1")
	}
	for _, s := range []*digest.Summary{&whole, &second} {
		s.Read, s.Now = digest.ReadStats{}, time.Time{}
	}
	a, _ := json.Marshal(whole)
	b, _ := json.Marshal(second)
	// a dead run's end says how long before its digest worker.json was
	// written: the two digests may fall in different seconds
	age := regexp.MustCompile(`written [0-9]+s before the digest`)
	a, b = age.ReplaceAll(a, []byte("written Ns before the digest")), age.ReplaceAll(b, []byte("written Ns before the digest"))
	if string(a) != string(b) {
		t.Fatalf("the digest on the twin's kept stamps differs from a whole read:\n%s\n%s", a, b)
	}
}

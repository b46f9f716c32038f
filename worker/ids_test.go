package worker

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/sim"
)

// Integrity review finding 3: ids that python3 keeps apart (lone surrogate
// escapes, surrogateescape ids, raw cp1252 bytes) all became U+FFFD, so
// four prompts of twelve were skipped as duplicates and never sent.
func TestSurrogateIdsAreAllSent(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is needed for the id check under CI")
		}
		t.Skip("no python3")
	}
	root := makeRoot(t, map[string]int{"A": 0})
	dir := filepath.Join(root, "prepared", "A")
	ids := []string{`"x\ud800"`, `"x\udc00"`, `"x\ufffd"`, `"caf\udce9"`, `"caf\udce8"`, "9007199254740993", "9007199254740992",
		"1e21", "1000000000000000000000", `"a<b&c"`, `"plain"`, "\"r\xe9sum\xe9\"", "\"r\xe8sum\xe8\""}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(`{"id": ` + id + `, "messages": [{"role": "user", "content": "hi"}]}` + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, sim.Options{Speed: 200})
	var log syncBuffer
	if err := Run(context.Background(), Config{Root: root, Server: s.URL(), Concurrency: 4}, &log); err != nil {
		t.Fatal(err)
	}
	// every prompt id, as python3's json.loads reads it (scripts/ids.py, the
	// harness parse's differential test runs too), has exactly one record
	out, err := exec.Command(py, "../scripts/ids.py", "check", dir).Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	// 12 distinct prompts (1e21 = 10**21), none missing, none twice, none stray
	if got := strings.TrimSpace(string(out)); got != "12 0 0 0" {
		t.Fatalf("python3 counts prompts, missing, duplicated, stray = %s, want 12 0 0 0; log:\n%s", got, log.String())
	}
	if !strings.Contains(log.String(), "1 prompt lines repeat the id") {
		t.Errorf("only 1e21 = 10**21 repeats an id; log:\n%s", log.String())
	}
	// the next start finds them all done
	log = syncBuffer{}
	if err := Run(context.Background(), Config{Root: root, Server: s.URL()}, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "skipped (already done: 12") {
		t.Errorf("second start:\n%s", log.String())
	}
}

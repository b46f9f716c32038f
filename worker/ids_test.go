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

// pyCheck is the integrity review's checker: every prompt id (as python3's
// json.loads reads it, with surrogateescape and exact decimals) appears
// exactly once in raw_responses.jsonl.
const pyCheck = `
import json, sys
from decimal import Decimal
from collections import Counter
def canon(v):
    if isinstance(v, bool): return ('b', v)
    if v is None: return ('null',)
    if isinstance(v, Decimal): return ('n', v.normalize() if v != 0 else Decimal(0))
    if isinstance(v, str): return ('s', v)
    if isinstance(v, list): return ('l', tuple(canon(x) for x in v))
    if isinstance(v, dict): return ('d', tuple(sorted((k, canon(x)) for k, x in v.items())))
def ids(path):
    return [canon(json.loads(raw.decode('utf-8', 'surrogateescape'), parse_float=Decimal, parse_int=Decimal)['id'])
            for raw in open(path, 'rb') if raw.strip()]
d = sys.argv[1]
p = set(ids(d + '/prompts.jsonl')); c = Counter(ids(d + '/raw_responses.jsonl'))
print(len(p), sum(1 for x in p if c[x] == 0), sum(1 for x in c if c[x] > 1), sum(1 for x in c if x not in p))
`

// Integrity review finding 3: ids that python3 keeps apart (lone surrogate
// escapes, surrogateescape ids, raw cp1252 bytes) all became U+FFFD, so
// four prompts of twelve were skipped as duplicates and never sent.
func TestSurrogateIdsAreAllSent(t *testing.T) {
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
	out, err := exec.Command(py, "-c", pyCheck, dir).Output()
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

package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// eraRoot writes digesttest.EraNight's root (the old script's records over
// an FP8 era and an auto era of the server log); the want is each
// category's records by config in status's words, from Python's counts.
func eraRoot(t *testing.T) (string, map[string]string) {
	root := t.TempDir()
	want := digesttest.EraWant(digesttest.EraNight(t, root))
	ageRoot(t, root, map[string]time.Duration{"logs/sglang_inference.log": 30 * time.Minute,
		"prepared/B2_opencodeinstruct/raw_responses.jsonl": 40 * time.Minute, "prepared/B3_python/raw_responses.jsonl": 4 * time.Hour})
	return root, want
}

// configsOf is what status's tokens line of a category ("  NAME: …
// tokens; records by config: …; ended: …") says of its configurations.
func configsOf(line string) string {
	_, rest, ok := strings.Cut(line, "; records by config: ")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "; ended: ")
	return strings.TrimSpace(rest)
}

// pyRunConfigs is a Go worker's category's records by config in status's
// words, from Python's json count of raw_responses.jsonl by run and
// runs.jsonl's snapshot of each run (its kv_cache_dtype, named as every
// view names it, parse.KVLabel).
func pyRunConfigs(t *testing.T, root, cat string) string {
	py := testgate.Tool(t, "python3", "a count of the Go worker's records by run")
	const count = `import json, sys
d = sys.argv[1]
runs, order = {}, []
for line in open(d + "/runs.jsonl"):
    r = json.loads(line)
    if r.get("end") or r["run"] in runs:
        continue
    info = (r.get("server_info") or {}).get("info") or {}
    res = str(info["kv_cache_dtype_resolved"]) if "kv_cache_dtype_resolved" in info else ""
    runs[r["run"]] = [str(info.get("kv_cache_dtype") or ""), res, 0, 0]
    order.append(r["run"])
for line in open(d + "/raw_responses.jsonl"):
    if not line.endswith("\n"):
        continue
    r = json.loads(line)
    x = runs[r["run"]]
    x[2] += 1
    x[3] += r.get("completion_tokens") or 0
print(json.dumps([runs[k] for k in order]))`
	out, err := exec.Command(py, "-c", count, filepath.Join(root, "prepared", cat)).Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var runs [][4]any
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var cs []parse.ConfigCount
	for _, r := range runs {
		label, n, tok := parse.KVLabel(r[0].(string), r[1].(string)), int64(r[2].(float64)), int64(r[3].(float64))
		if i := slices.IndexFunc(cs, func(c parse.ConfigCount) bool { return c.Config == label }); i >= 0 {
			cs[i].Records, cs[i].Tokens = cs[i].Records+n, cs[i].Tokens+tok
		} else if n > 0 {
			cs = append(cs, parse.ConfigCount{Config: label, Records: n, Tokens: tok})
		}
	}
	return parse.ConfigText(cs)
}

package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// A local root is read by the agent's Go tally, not the bare host's awk:
// `status --local` on the old script's 6 MB of records (Python's
// json.dumps) examines every one, and its outcomes and prompt tokens are
// Python's own count. Before, the awk summed tokens only and status said
// "30,000 not examined".
func TestLocalStatusExaminesEveryRecord(t *testing.T) {
	t.Parallel()
	py := testgate.Tool(t, "python3", "a root the old script wrote")
	root := t.TempDir()
	gen := `import json, os, sys, time
d = os.path.join(sys.argv[1], "prepared", "B1_glaive")
os.makedirs(d)
with open(os.path.join(d, "prompts.jsonl"), "w") as f:
    for i in range(40000):
        f.write(json.dumps({"id": "B1-%d" % i, "messages": [{"role": "user", "content": "q"}]}) + "\n")
with open(os.path.join(d, "raw_responses.jsonl"), "w") as f:
    for i in range(30000):
        fr = ["stop", "length", "abort"][(i % 10 == 9) + 2 * (i % 100 == 50)]
        f.write(json.dumps({"id": "B1-%d" % i, "response": "" if fr == "length" else "a" * 150, "finish_reason": fr,
                            "usage": {"completion_tokens": 100 + i % 7, "prompt_tokens": 20}, "timestamp": time.time() - 3600 + i * 0.1}) + "\n")
stop = length = abort = empty = prompt = 0
with open(os.path.join(d, "raw_responses.jsonl")) as f:
    for line in f:
        r = json.loads(line)
        stop += r["finish_reason"] == "stop"; length += r["finish_reason"] == "length"; abort += r["finish_reason"] == "abort"
        empty += r["response"] == ""; prompt += r["usage"]["prompt_tokens"]
print(stop, length, abort, empty, prompt)`
	out, err := exec.Command(py, "-c", gen, root).Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var want [5]int64
	for i, f := range strings.Fields(string(out)) {
		want[i], _ = strconv.ParseInt(f, 10, 64)
	}
	s := statusJSON(t, "--local", root, "--server-url", "http://127.0.0.1:1")
	if len(s.Categories) != 1 || s.Categories[0].Outcomes == nil {
		t.Fatalf("no outcomes: %+v", s.Categories)
	}
	o := *s.Categories[0].Outcomes
	got := [5]int64{o.Stop, o.Length, o.Abort, o.Empty, o.PromptTokens}
	if o.Unexamined != 0 || got != want || o.Records != 30000 {
		t.Fatalf("outcomes %+v; python's json counts stop, length, abort, empty, prompt tokens %v", o, want)
	}
}

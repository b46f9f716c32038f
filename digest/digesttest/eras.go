package digesttest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// eraGen writes, as the old script and SGLang would, a night with two
// server configurations: an SGLang log whose first start line carries
// kv_cache_dtype='fp8_e4m3' (20 h ago), its decode lines, its graceful
// stop, then a start with 'auto' (5 h ago) and its decode lines, each era's
// start more than the tail's 256 KB back; B2's 1,652 records in the FP8
// era and 5,348 in the auto era (json.dumps, datetime.isoformat()
// timestamps in the host's zone, reasoning_content, finish_reason), and
// B3's 50 of its 60 prompts, 30 of them with no time. It prints what Python's json module
// counts back from the files: per category, per era, records and tokens,
// and those with no time.
const eraGen = `import json, sys, time, datetime
root, now = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else time.time()
def stamp(t): return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
fp8_at, stop_at, auto_at = now - 20 * 3600, now - 15 * 3600, now - 5 * 3600
launch = "server_args=ServerArgs(model_path='/models/qwen3-8b', tokenizer_path='/models/qwen3-8b', dtype='auto', kv_cache_dtype='%s', quantization=None, mem_fraction_static=0.88, speculative_algorithm=None, port=30000)"
with open(root + "/logs/sglang_inference.log", "w") as f:
    def decode(t0, t1):
        t = t0
        while t < t1:
            f.write("[%s TP0] Decode batch. #running-req: 72, #token: 90000, token usage: 0.96, cuda graph: True, gen throughput (token/s): 931.00, #queue-req: 0, \n" % stamp(t))
            t += 10
    f.write("[%s] %s\n" % (stamp(fp8_at), launch % "fp8_e4m3"))
    f.write("[%s] The server is fired up and ready to roll!\n" % stamp(fp8_at + 120))
    decode(fp8_at + 130, stop_at)
    f.write("[%s] Received sigterm. Shutting down gracefully.\n" % stamp(stop_at))
    f.write("[%s] %s\n" % (stamp(auto_at), launch % "auto"))
    f.write("[%s] The server is fired up and ready to roll!\n" % stamp(auto_at + 120))
    decode(auto_at + 130, now - 1800)
def records(cat, prompts, times):
    d = root + "/prepared/" + cat
    with open(d + "/prompts.jsonl", "w") as f:
        for i in range(prompts):
            f.write(json.dumps({"id": "%s-%05d" % (cat, i), "messages": [{"role": "user", "content": "q"}]}) + "\n")
    with open(d + "/raw_responses.jsonl", "w") as f:
        for i, t in enumerate(times):
            r = {"id": "%s-%05d" % (cat, i), "reasoning_content": "let me think", "response": "a",
                 "finish_reason": "length" if i % 20 == 19 else "stop", "usage": {"completion_tokens": 100 + i % 7}}
            if t is not None:
                r["timestamp"] = datetime.datetime.fromtimestamp(t).isoformat()
            f.write(json.dumps(r) + "\n")
records("B2_opencodeinstruct", 7000, [fp8_at + 600 + i * 8.5 for i in range(1652)] + [auto_at + 600 + i * 2.5 for i in range(5348)])
records("B3_python", 60, [None] * 30 + [auto_at + 900 + i * 60 for i in range(20)])
counts = {}
for cat in ("B2_opencodeinstruct", "B3_python"):
    c = counts.setdefault(cat, {})
    for line in open(root + "/prepared/" + cat + "/raw_responses.jsonl"):
        r = json.loads(line)
        if "timestamp" not in r:
            era = "no time"
        else:
            t = time.mktime(datetime.datetime.fromisoformat(r["timestamp"]).timetuple())
            era = "fp8_e4m3" if fp8_at <= t < auto_at else "auto" if t >= auto_at else "before"
        n = c.setdefault(era, [0, 0])
        n[0] += 1
        n[1] += r["usage"]["completion_tokens"]
print(json.dumps(counts))`

// EraNight writes eraGen's root in dir and returns what Python's json
// module counts in it: per category, per era ("fp8_e4m3", "auto",
// "before", "no time"), records and completion tokens.
func EraNight(t testing.TB, dir string) map[string]map[string][2]int64 {
	t.Helper()
	return eraNight(t, dir)
}

// EraNightAt is EraNight as of now, in UTC (the host's zone for Python's
// zone-less times), for a golden file.
func EraNightAt(t testing.TB, dir string, now time.Time) map[string]map[string][2]int64 {
	t.Helper()
	return eraNight(t, dir, strconv.FormatInt(now.Unix(), 10))
}

func eraNight(t testing.TB, dir string, now ...string) map[string]map[string][2]int64 {
	t.Helper()
	py := testgate.Tool(t, "python3", "the old script's night over two server configurations")
	for _, d := range []string{"logs", "prepared/B2_opencodeinstruct", "prepared/B3_python"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(py, append([]string{"-c", eraGen, dir}, now...)...)
	if len(now) > 0 {
		cmd.Env = append(os.Environ(), "TZ=UTC")
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var counts map[string]map[string][2]int64
	if err := json.Unmarshal(out, &counts); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if counts["B2_opencodeinstruct"]["fp8_e4m3"][0] != 1652 || counts["B2_opencodeinstruct"]["auto"][0] != 5348 {
		t.Fatalf("the night's records: %v", counts)
	}
	return counts
}

// EraWant is each category's records by config in status's words
// (parse.ConfigText), from EraNight's counts.
func EraWant(counts map[string]map[string][2]int64) map[string]string {
	want := map[string]string{}
	for cat, c := range counts {
		var cs []parse.ConfigCount
		for _, era := range []struct{ key, label string }{{"fp8_e4m3", "fp8-kv"}, {"auto", "auto-kv"}} {
			if n := c[era.key]; n[0] > 0 {
				cs = append(cs, parse.ConfigCount{Config: era.label, Inferred: true, Records: n[0], Tokens: n[1]})
			}
		}
		if n := c["before"]; n[0] > 0 {
			cs = append(cs, parse.ConfigCount{Config: parse.UnknownConfigLabel, Records: n[0], Tokens: n[1]})
		}
		if n := c["no time"]; n[0] > 0 {
			cs = append(cs, parse.ConfigCount{Config: parse.ConfigNoTime, Records: n[0], Tokens: n[1]})
		}
		want[cat] = parse.ConfigText(cs)
	}
	return want
}

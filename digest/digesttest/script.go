package digesttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// oldScript is a stand-in of the users' run_inference.py: the banners and
// progress lines, records by json.dumps with a float "timestamp", a
// request's time-out printed by traceback.print_exc inside the request's
// function (the script goes on), and its end by argument 2:
//   - finish: "All categories finished"
//   - crash: an answer with no "choices" read at the top level, a KeyError
//     nothing catches (Python prints its traceback and exits 1)
//   - interrupt: a SIGINT, the KeyboardInterrupt's traceback
//   - hang: it takes B3_python up, prints a request's time-out and waits
//     on, its log open, as on a server that never answers (the test kills it)
const oldScript = `import json, os, signal, sys, time, traceback
root, mode = sys.argv[1], sys.argv[2]

def banner(name, n):
    print("=" * 60)
    print("Processing: %s (SHORT)" % name)
    print("=" * 60)
    print("Running %d requests (concurrency=8, max_tokens=2048)..." % n, flush=True)

def call(name, i):
    try:
        if i == 3:
            raise TimeoutError("timed out")
    except Exception:
        traceback.print_exc()
        sys.stderr.flush()
    if mode == "crash" and name == "B2_code" and i == 7:
        return {"object": "error", "message": "This model's maximum context length is 32768 tokens."}
    return {"choices": [{"message": {"content": "answer %d" % i}}], "usage": {"completion_tokens": 236}}

for name in ("B1_glaive", "B2_code"):
    banner(name, 10)
    with open(os.path.join(root, "prepared", name, "raw_responses.jsonl"), "a") as f:
        for i in range(10):
            resp = call(name, i)
            rec = {"id": "%s-%05d" % (name, i), "response": resp["choices"][0]["message"]["content"],
                   "usage": resp["usage"], "timestamp": time.time()}
            f.write(json.dumps(rec) + "\n")
            f.flush()
    print("10/10 (1 err) 1.3 req/s avg_comp=236tok ETA=0s", flush=True)
    if mode == "interrupt" and name == "B2_code":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    if mode == "hang" and name == "B2_code":
        banner("B3_python", 10)
        call("B3_python", 3)  # its first request times out, printed; the rest hang
        time.sleep(3600)
print("All categories finished")
`

// OldScript runs the stand-in of run_inference.py on a new root, as users
// start it (nohup python3 run_inference.py > logs/inference_all.log 2>&1),
// and returns the root and the started process (the caller waits for it).
// A missing python3 fails under CI=true and skips elsewhere.
func OldScript(t testing.TB, mode string) (Root, *exec.Cmd) {
	t.Helper()
	py := testgate.Tool(t, "python3", "the old script's night")
	r := NewRoot(t)
	for _, c := range []string{"B1_glaive", "B2_code", "B3_python"} {
		r.Add(parse.PreparedDir+"/"+c+"/"+parse.PromptsFile, `{"id": "p", "messages": []}`)
	}
	script := filepath.Join(r.Dir, "run_inference.py")
	if err := os.WriteFile(script, []byte(oldScript), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(r.Dir, filepath.FromSlash(parse.WorkerLogPath))
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the script keeps its own copy
	cmd := exec.Command(py, script, r.Dir, mode)
	cmd.Dir = r.Dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return r, cmd
}

package worker

import (
	"os"
	"path/filepath"
	"testing"
)

// A root with glob characters is that directory: its sibling "synthf"
// (which "synth[fp8]" matches as a pattern) is not read.
func TestPlanEscapesRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, root := range []string{"synth[fp8]", "synth*", "synth?x", `synth\x`} {
		t.Run(root, func(t *testing.T) {
			dir := filepath.Join(base, root)
			for _, c := range []struct{ root, cat string }{{root, "A"}, {"synthf", "OTHER"}, {"synthxx", "OTHER2"}} {
				p := filepath.Join(base, c.root, "prepared", c.cat)
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(p, "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
			}
			cats, err := Plan(&Config{Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			if len(cats) != 1 || cats[0].Name != "A" || cats[0].Dir != filepath.Join(dir, "prepared", "A") {
				t.Errorf("root %q: %+v", root, cats)
			}
		})
	}
}

// The server's log is the one pipeline.toml's servers list gives the server
// the worker talks to (named, or the dashboard's default for its place);
// --server-log wins; else the usual one.
func TestPlanFindsTheServerLog(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte(`servers = ["http://127.0.0.1:30000", {url = "http://127.0.0.1:30001/", log = "logs/b.log"}, "http://127.0.0.1:30002"]`+"\n"), 0o644)
	for _, c := range []struct{ server, flag, want string }{
		{"http://127.0.0.1:30001", "", filepath.Join(root, "logs", "b.log")},
		{"http://127.0.0.1:30002", "", filepath.Join(root, "logs", "sglang_inference.30002.log")},
		{"http://127.0.0.1:30000", "", filepath.Join(root, "logs", "sglang_inference.log")},
		{"http://127.0.0.1:39999", "", filepath.Join(root, "logs", "sglang_inference.log")},
		{"http://127.0.0.1:30001", "/var/log/s.log", "/var/log/s.log"},
	} {
		cfg := Config{Root: root, Server: c.server, ServerLog: c.flag}
		if _, err := Plan(&cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.ServerLog != c.want {
			t.Errorf("server %s, flag %q: log %s, want %s", c.server, c.flag, cfg.ServerLog, c.want)
		}
	}
}

// The worker ignores [gate] (and [capture], [cost]): a typo there leaves
// that section out for the views and the night still runs, with the
// classes and caps the file gives. Before, min_pass_rate = 95 made Plan
// refuse the whole file.
func TestPlanRunsPastAGateTypo(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte(`{"id":1}`+"\n"+`{"id":2}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(root, "pipeline.toml"), []byte("[[categories]]\nname = \"A\"\nmax_samples = 1\n[gate]\nmin_pass_rate = 95\n"), 0o644)
	cats, err := Plan(&Config{Root: root, Server: "http://127.0.0.1:30000"})
	if err != nil || len(cats) != 1 || cats[0].MaxSamples != 1 {
		t.Fatalf("Plan: %v, %+v", err, cats)
	}
}

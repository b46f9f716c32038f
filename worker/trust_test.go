package worker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pipeline.toml others can write is refused for where the requests and
// the key go (server, servers, api_key_file), and read for the rest: its
// categories still run when the flags say where.
func TestPlanRefusesAManifestOthersCanWrite(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
	man := filepath.Join(root, "pipeline.toml")
	os.WriteFile(man, []byte("server = \"http://127.0.0.1:9\"\napi_key_file = \"/home/alice/.cache/huggingface/token\"\n[[categories]]\nname = \"A\"\n"), 0o644)
	os.Chmod(man, 0o666) // a team folder's umask, or another user's chmod
	_, err := Plan(&Config{Root: root})
	for _, want := range []string{"refusing pipeline.toml's server, api_key_file (where requests and the key go): " + man + " (owner ", "mode 0666) is writable by others; fix: give --server --api-key-file, or chmod go-w " + man} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Plan: %v; want %q", err, want)
		}
	}
	cfg := Config{Root: root, Server: "http://127.0.0.1:30000", APIKeyFile: filepath.Join(root, "key")}
	cats, err := Plan(&cfg)
	if err != nil || len(cats) != 1 || cats[0].Name != "A" || cfg.Server != "http://127.0.0.1:30000" {
		t.Fatalf("with the flags: %v %v %q", cats, err, cfg.Server)
	}
	os.WriteFile(man, []byte("[[categories]]\nname = \"A\"\n"), 0o666)
	if cats, err := Plan(&Config{Root: root}); err != nil || len(cats) != 1 {
		t.Fatalf("nothing decisive in it: %v %v", cats, err)
	}
}

// The key file must be the user's own and unreadable by others; the key
// is then read, else the run fails before any request.
func TestAPIKeyFileOthersCanRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte("hf_SECRET\n"), 0o644)
	if k, err := loadAPIKey(Config{APIKeyFile: p}); err == nil || k != "" || !strings.Contains(err.Error(), "api key: "+p+" (owner ") || !strings.Contains(err.Error(), "chmod go-rw "+p) {
		t.Fatalf("a 0644 key: %q %v", k, err)
	}
	os.Chmod(p, 0o600)
	if k, err := loadAPIKey(Config{APIKeyFile: p}); err != nil || k != "hf_SECRET" {
		t.Fatalf("a 0600 key: %q %v", k, err)
	}
}

// An untrusted servers list names the server log the worker reads, even
// with --server given: --server-log instead is what leaves nothing to it.
func TestPlanRefusesServersOthersCanWrite(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "A", "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
	man := filepath.Join(root, "pipeline.toml")
	os.WriteFile(man, []byte("[[servers]]\nurl = \"http://127.0.0.1:30000\"\nlog = \"/etc/shadow\"\n"), 0o666)
	os.Chmod(man, 0o666)
	if _, err := Plan(&Config{Root: root, Server: "http://127.0.0.1:30000"}); err == nil || !strings.Contains(err.Error(), "refusing pipeline.toml's servers") || !strings.Contains(err.Error(), "give --server-log, or chmod go-w") {
		t.Fatalf("Plan: %v", err)
	}
	if _, err := Plan(&Config{Root: root, Server: "http://127.0.0.1:30000", ServerLog: filepath.Join(root, "s.log")}); err != nil {
		t.Fatalf("with --server-log: %v", err)
	}
}

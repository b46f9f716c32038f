package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

// The review's major finding, on a real sshd with two accounts: mallory
// writes the team root's pipeline.toml naming his own server and alice's
// 0600 Hugging Face token as api_key_file; alice launches. Her worker
// refuses the file (naming it, its owner and mode, and the fix), her
// status refuses its server for the probes, and mallory's server hears
// nothing. Then alice writes the same keys in a
// pipeline.toml of her own: the worker runs, and the key reaches the
// server she named, which requires it.
func TestForeignManifestGetsNoSecret(t *testing.T) {
	alice, mallory := addUser(t, "a"), addUser(t, "m")
	lab := newTwoUserLab(t, alice, mallory)
	const secret = "hf_SECRETTOKEN_alice_1234567890"
	token := filepath.Join(alice.Home, ".cache", "huggingface", "token")
	alice.write(t, token, secret+"\n")
	os.Chmod(token, 0o600)

	var mu sync.Mutex
	var heard []string
	capture := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		heard = append(heard, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	defer capture.Close()

	root := lab.teamRoot(t, 20)
	man := filepath.Join(root, parse.ManifestPath)
	mallory.write(t, man, "server = \""+capture.URL+"\"\napi_key_file = \""+token+"\"\n")
	out, code := lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin)
	for _, want := range []string{"refusing pipeline.toml's server, api_key_file (where requests and the key go): " + man + " (owner " + mallory.Name + ", mode 0644) is not yours (" + alice.Name + "); fix: give --server --api-key-file, or if you trust it"} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("launch as %s: code %d: %s\nwant %q", alice.Name, code, out, want)
		}
	}
	// alice's status refuses the file's servers too: it probes none of them
	out, code = lab.cli(t, alice, "status", "--root", root)
	for _, want := range []string{man + ": refusing its server and servers (where the probes go, which logs are read): " + man + " (owner " + mallory.Name + ", mode 0644) is not yours (" + alice.Name + ")"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("status as %s: code %d: %s\nwant %q", alice.Name, code, out, want)
		}
	}
	time.Sleep(time.Second) // a worker that went on would have asked /health by now
	mu.Lock()
	if len(heard) > 0 {
		t.Errorf("mallory's server heard %q", heard)
	}
	mu.Unlock()

	srv := sim.New(sim.Options{Speed: 50, APIKey: secret})
	if err := srv.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	os.Remove(man)
	alice.write(t, man, "server = \""+srv.URL()+"\"\napi_key_file = \""+token+"\"\n")
	out, code = lab.cli(t, alice, "launch", "--root", root, "--worker-bin", lab.bin)
	if code != 0 && !strings.Contains(out, "nothing left to do") { // done within launch's check (review #15)
		t.Fatalf("launch with alice's own manifest: code %d: %s", code, out)
	}
	raw := filepath.Join(root, "prepared", "A", parse.RawFile)
	testgate.Eventually(t, time.Minute, "20 records with the key", func() bool { return countFileLines(raw) == 20 })
}

package remote

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostShells are the shells (and userlands) a host may run the install's
// scripts with: dash, bash, and busybox sh with busybox's own applets
// first on PATH, as a small image has them.
func hostShells(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, sh := range []string{"dash", "bash"} {
		p, err := exec.LookPath(sh)
		if err != nil {
			t.Fatalf("%s: %v (apt-get install -y %s)", sh, err, sh)
		}
		out[sh] = []string{p}
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox: apt-get install -y busybox")
	}
	dir := t.TempDir()
	for _, c := range []string{"sh", "ls", "id", "dirname", "tr", "uname", "gunzip", "sha256sum", "wc", "mkdir", "mv", "chmod", "rm", "cat"} {
		must(t, os.WriteFile(filepath.Join(dir, c), []byte("#!"+bb+" sh\nexec "+bb+" "+c+` "$@"`+"\n"), 0o755))
	}
	out["busybox"] = []string{bb, "sh", "-c", "PATH=" + dir + ":$PATH; export PATH; exec " + bb + ` sh "$@"`, "busybox-sh"}
	return out
}

// The install's host scripts under each shell: where.sh names the place
// by the platform, loose.sh passes a safe agent and refuses a loose one,
// install.sh copies gzip'd input whole and refuses a corrupt one.
func TestHostScriptsEveryShell(t *testing.T) {
	t.Parallel()
	payload := bytes.Repeat([]byte("agent bytes\n"), 5000)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(payload)
	zw.Close()
	sum := sha256.Sum256(payload)
	for name, shell := range hostShells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			run := func(script string, stdin []byte, args ...string) (string, string, int) {
				t.Helper()
				f := filepath.Join(t.TempDir(), "s.sh")
				must(t, os.WriteFile(f, []byte(script), 0o600))
				cmd := exec.Command(shell[0], append(append(append([]string{}, shell[1:]...), f), args...)...)
				cmd.Env = append(os.Environ(), "HOME="+home)
				cmd.Stdin = bytes.NewReader(stdin)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return out.String(), errb.String(), code
			}
			out, _, _ := run(whereScript+`printf '%s|%s|%s|%s|%s\n' "$gz" "$sum" "$os" "$ad" "$ab"`, nil, "", "", AgentProto)
			want := "1|1|linux|" + agentDir(home) + "|" + agentDir(home) + "/synthwatch\n"
			if out != want {
				t.Fatalf("where.sh: %q, want %q", out, want)
			}
			dir := agentDir(home)
			_, errb, code := run(installScript, gz.Bytes(), dir, hex.EncodeToString(sum[:]), strconv.Itoa(len(payload)), "1")
			if got, _ := os.ReadFile(filepath.Join(dir, "synthwatch")); code != 0 || !bytes.Equal(got, payload) {
				t.Fatalf("install.sh: exit %d %s", code, errb)
			}
			if fi, _ := os.Stat(filepath.Join(dir, "synthwatch")); fi.Mode().Perm() != 0o700 {
				t.Fatalf("installed mode %v", fi.Mode())
			}
			_, errb, code = run(installScript, gz.Bytes(), dir, strings.Repeat("0", 64), strconv.Itoa(len(payload)), "1")
			if code == 0 || !strings.Contains(errb, "sha256") {
				t.Fatalf("a corrupt copy was taken: exit %d %s", code, errb)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("the refused copy left %d files", len(ents))
			}
			check := whereScript + looseScript + `if bad=$(loose "$ab"); then echo "loose $bad"; else echo safe; fi`
			if out, _, _ := run(check, nil, "", "", AgentProto); out != "safe\n" {
				t.Fatalf("a safe agent: %q", out)
			}
			must(t, os.Chmod(filepath.Dir(dir), 0o777))
			if out, _, _ := run(check, nil, "", "", AgentProto); !strings.HasPrefix(out, "loose drwxrwxrwx 0 "+filepath.Dir(dir)) && !strings.HasPrefix(out, "loose drwxrwxrwx "+strconv.Itoa(os.Getuid())+" "+filepath.Dir(dir)) {
				t.Fatalf("a folder anyone may write: %q", out)
			}
		})
	}
}

package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// The README's install line, `go install …/cmd/synthwatch@latest`, works
// once the module is served by a module proxy: this test serves this
// tree's tracked files as a release (a file:// proxy in the layout every
// proxy uses: @v/list, .info, .mod, .zip), runs the README's command with a
// fresh GOPATH and no network (the module's dependencies come from the
// module cache the test suite already filled), and runs the binary it
// installed. The module is not published yet, so nothing else proves the
// line; when it is, the same command reads it from proxy.golang.org.
func TestGoInstallAtLatest(t *testing.T) {
	testgate.E2E(t)
	// a version of its own each run: the module cache the suite shares
	// keeps what it extracted (and Go's index of it) for a version for
	// good, so a fixed one would install an earlier run's tree
	const mod = "github.com/synthwatch/synthwatch"
	ver := "v0.0.0-test." + strconv.FormatInt(time.Now().UnixNano(), 10)
	root := moduleRoot(t)
	files := trackedFiles(t, root)

	proxy := t.TempDir()
	dir := filepath.Join(proxy, filepath.FromSlash(mod), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(map[string]any{"Version": ver, "Time": time.Now().UTC().Format(time.RFC3339)})
	for name, b := range map[string][]byte{"list": []byte(ver + "\n"), ver + ".info": info, ver + ".mod": gomod, ver + ".zip": moduleZip(t, root, mod+"@"+ver, files)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	gopath := t.TempDir()
	modcache := goEnv(t, "GOMODCACHE")
	t.Cleanup(func() { // what the install put in the shared cache: read-only, as Go leaves it
		for _, p := range []string{filepath.Join(modcache, filepath.FromSlash(mod)+"@"+ver), filepath.Join(modcache, "cache", "download", filepath.FromSlash(mod), "@v")} {
			filepath.WalkDir(p, func(q string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					os.Chmod(q, 0o755)
				}
				return nil
			})
			if strings.HasSuffix(p, "@v") {
				m, _ := filepath.Glob(filepath.Join(p, ver+".*"))
				for _, f := range m {
					os.Remove(f)
				}
				continue
			}
			os.RemoveAll(p)
		}
	})
	line := readmeInstall(t, root)
	if line != "go install "+mod+"/cmd/synthwatch@latest" {
		t.Fatalf("the README's install line is %q: this test serves %s", line, mod)
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = t.TempDir() // outside any module, as a user's shell is
	cmd.Env = append(os.Environ(),
		"GOPATH="+gopath, "GOMODCACHE="+modcache, "GOBIN=",
		"GOPROXY=file://"+filepath.ToSlash(proxy), // this release, and nothing from the network
		// the checksum database is a network service: off, and the
		// dependencies are the module cache's, which the suite verified
		"GOSUMDB=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install …@latest: %v\n%s", err, out)
	}
	bin := filepath.Join(gopath, "bin", "synthwatch")
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", bin, err, out)
	}
	if !strings.Contains(string(out), ver) {
		t.Fatalf("--version of the installed binary says %q, want the release's %s", out, ver)
	}
}

// readmeInstall is the README's `go install` line.
func readmeInstall(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "go install ") {
			return strings.TrimSpace(l)
		}
	}
	t.Fatal("the README has no `go install` line")
	return ""
}

// moduleRoot is the module's root, from this package's folder.
func moduleRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// trackedFiles are the files of the release: git's tracked files, less
// those of a nested module (tools/soakplot), as `go mod` leaves them out.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files (the release is the tracked files): %v", err)
	}
	var nested []string
	all := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	for _, f := range all {
		if strings.HasSuffix(f, "/go.mod") {
			nested = append(nested, strings.TrimSuffix(f, "go.mod"))
		}
	}
	var files []string
next:
	for _, f := range all {
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				continue next
			}
		}
		if fi, err := os.Lstat(filepath.Join(root, f)); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	return files
}

// moduleZip is a module zip: every file under "module@version/".
func moduleZip(t *testing.T, root, prefix string, files []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(prefix + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}

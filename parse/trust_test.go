package parse

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// chownOther gives p to nobody, as another user's file is (root only).
func chownOther(t *testing.T, p string) bool {
	if os.Geteuid() != 0 {
		return false
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return true
}

func TestReadTrusted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "pipeline.toml")
	os.WriteFile(p, []byte("server = \"http://x\"\n"), 0o644)
	if data, u, err := ReadTrusted(p); err != nil || u != nil || string(data) != "server = \"http://x\"\n" {
		t.Fatalf("the user's own 0644 file: %q %v %v", data, u, err)
	}
	os.Chmod(p, 0o664)
	_, u, err := ReadTrusted(p)
	var ue *UntrustedError
	if err != nil || !errors.As(u, &ue) || !strings.Contains(u.Error(), p+" (owner ") || !strings.Contains(u.Error(), "mode 0664) is writable by others; fix: chmod go-w "+p) {
		t.Fatalf("group-writable: %v %v", u, err)
	}
	os.Chmod(p, 0o644)
	if chownOther(t, p) {
		data, u, err := ReadTrusted(p)
		if err != nil || u == nil || len(data) == 0 || !strings.Contains(u.Error(), "(owner nobody, mode 0644) is not yours (root); fix: if you trust it, copy it to a file of yours and move that over it") {
			t.Fatalf("another user's file: %q %v %v", data, u, err)
		}
	}
	if _, _, err := ReadTrusted(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func TestReadSecret(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token")
	os.WriteFile(p, []byte("hf_x\n"), 0o600)
	if b, err := ReadSecret(p); err != nil || string(b) != "hf_x\n" {
		t.Fatalf("0600: %q %v", b, err)
	}
	for _, m := range []os.FileMode{0o640, 0o604, 0o620} {
		os.Chmod(p, m)
		if b, err := ReadSecret(p); err == nil || b != nil || !strings.Contains(err.Error(), "is readable or writable by others; fix: chmod go-rw "+p) {
			t.Errorf("mode %04o: %q %v", m, b, err)
		}
	}
	os.Chmod(p, 0o600)
	if chownOther(t, p) {
		if b, err := ReadSecret(p); err == nil || b != nil || !strings.Contains(err.Error(), "(owner nobody, mode 0600) is not yours (root)") {
			t.Errorf("another user's key: %q %v", b, err)
		}
	}
}

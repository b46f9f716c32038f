package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// A pipeline.toml others can write names a server: the watcher probes the
// default instead, says why as the manifest's error (status exits 1 on
// it), and still reads the file's categories. The user's own 0644 file is
// obeyed.
func TestWatcherRefusesServersOthersCanWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "prepared", "A"), 0o755)
	os.WriteFile(filepath.Join(root, "prepared", "A", parse.PromptsFile), []byte(`{"id":1}`+"\n"), 0o644)
	man := filepath.Join(root, parse.ManifestPath)
	os.WriteFile(man, []byte("server = \"http://127.0.0.1:9\"\n[[categories]]\nname = \"A\"\nclass = \"LONG\"\n[classes.LONG]\n"), 0o644)
	poll := func() snapshot.Snapshot {
		return NewWatcher(remote.Local{}, Options{Host: "local", Root: root, ServerURL: parse.DefaultServerURL, OnePoll: true}, nil).Poll(context.Background())
	}
	if s := poll(); s.Server.URLFrom != "pipeline.toml server" || snapshot.ManifestError(s) != "" {
		t.Fatalf("the user's own manifest: server from %q, %q", s.Server.URLFrom, snapshot.ManifestError(s))
	}
	os.Chmod(man, 0o666)
	s := poll()
	want := man + ": refusing its server and servers (where the probes go, which logs are read): " + man + " (owner "
	if m := snapshot.ManifestError(s); !strings.HasPrefix(m, want) || !strings.Contains(m, "mode 0666) is writable by others; fix: chmod go-w "+man) {
		t.Errorf("manifest error %q, want %q…", m, want)
	}
	if s.Server.URL != parse.DefaultServerURL || len(s.Categories) != 1 || s.Categories[0].Class != "LONG" {
		t.Errorf("server %q from %q, categories %+v", s.Server.URL, s.Server.URLFrom, s.Categories)
	}
}

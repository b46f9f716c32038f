package remote

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// bannerHost is an sshd whose login shell (bash, zsh, fish) prints
// banners on both streams before every command.
func bannerHost(t *testing.T, name, shell string, rc map[string]string) *SSH {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Fatalf("%s: %v (apt-get install -y %s)", shell, err, name)
	}
	s := sshdtest.Start(t, sshdtest.WithLoginShell(shell))
	s.WriteRC(t, rc)
	return dial(t, opts(t, s))
}

// A command's output over a login shell that prints banners on stdout
// and stderr is the command's alone, on bash, zsh, fish and tcsh; the agent
// (the Go one and the shell one) reads through them as well, and the
// fallback, sent as it is and packed.
func TestExecThroughBanners(t *testing.T) {
	t.Parallel()
	for _, b := range sshdtest.Banners {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			h := bannerHost(t, b.Name, b.Shell, b.RC)
			ctx := context.Background()
			raw, err := h.runRaw(ctx, nil, []string{"true"}, []string{"true"})
			if err != nil || !strings.Contains(string(raw.Stdout), "Welcome to gpu-box") || !strings.Contains(string(raw.Stderr), "err, no newline") {
				t.Fatalf("the rc files printed no banner (the test proves nothing): %q %q %v", raw.Stdout, raw.Stderr, err)
			}
			r, err := h.Exec(ctx, "sh", "-c", `uname -sm; echo "$HOME"; echo oops >&2; exit 3`)
			if err != nil || r.ExitCode != 3 || strings.Count(string(r.Stdout), "\n") != 2 || string(r.Stderr) != "oops\n" {
				t.Fatalf("exec through the banners: %+v %v", r, err)
			}
			hostile := "a b'c\"$x`y`"
			if r, err := h.Exec(ctx, "printf", "%s", hostile); err != nil || string(r.Stdout) != hostile || len(r.Stderr) != 0 {
				t.Fatalf("quoting through %s: %q %q %v", b.Name, r.Stdout, r.Stderr, err)
			}
			ag := NewAgent(h)
			ag.UseBinary(selfAsBinary(t))
			t.Cleanup(ag.Close)
			for round := range 2 {
				a, err := ag.Run(ctx, loadBatch())
				if err != nil || len(a.reads["/proc/loadavg"]) == 0 {
					t.Fatalf("go agent, round %d: %v", round, err)
				}
			}
			if k := ag.Kind(); !strings.HasPrefix(k, "go ") {
				t.Fatalf("go agent: read by %q", k)
			}
			// tcsh refused the launcher's first line (a newline in its
			// quotes): the host learnt its shell, and the launch went again
			if h.LoginCsh() != (b.Name == "tcsh") {
				t.Fatalf("%s: the host's login shell taken for csh's: %v", b.Name, h.LoginCsh())
			}
			// no agent: the fallback reads through the same banners
			none := NewAgent(h)
			none.UseBinary("/nonexistent/synthwatch")
			t.Cleanup(none.Close)
			if _, err := none.Run(ctx, loadBatch()); !errors.Is(err, ErrNoAgent) || strings.Contains(none.Kind(), "Welcome") {
				t.Fatalf("no agent: %v, kind %q", err, none.Kind())
			}
			// the first as it is; the second packed, the first having said
			// the host unpacks (PackCommand). Its text holds what fish and
			// csh read otherwise than sh inside single quotes: the awk's
			// backslashes (tokens.sh), a path's backslash before a quote
			dir := filepath.Join(t.TempDir(), `odd\'\\dir`)
			must(t, os.MkdirAll(dir, 0o755))
			recs := filepath.Join(dir, "raw.jsonl")
			writeFile(t, recs, `{"id":1,"completion_tokens":7}`+"\n"+`{"id":2,"completion_tokens":5}`+"\n")
			p := NewFallback(h)
			for round := range 2 {
				if round == 1 && !p.Unpacks() {
					t.Fatal("the fallback's first answer did not say the host unpacks")
				}
				b := loadBatch()
				cat := b.Cat(recs, 1000)
				sums := b.Exec("sh", "-c", HostScript("tokens.sh"), "synthwatch-tokens", recs, "1", "62")
				if err := p.Run(ctx, b); err != nil {
					t.Fatalf("fallback, round %d: %v", round, err)
				}
				if r, ok := b.cats[0].Result(); !ok || r.Err != nil || len(r.Data) == 0 {
					t.Fatalf("fallback, round %d: %v %q %v", round, ok, r.Data, r.Err)
				}
				if r, ok := cat.Result(); !ok || r.Err != nil || len(r.Data) != 62 {
					t.Fatalf("fallback, round %d: the odd path %v %q %v", round, ok, r.Data, r.Err)
				}
				if r, ok := sums.Result(); !ok || r.ExitCode != 0 || !strings.HasPrefix(string(r.Stdout), "1 T 2 12 62 0") {
					t.Fatalf("fallback, round %d: the token sums %v %+v", round, ok, r)
				}
			}
			if !p.Unpacks() {
				t.Fatal("the packed batch was not unpacked through the login shell")
			}
		})
	}
}

package remote

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
	for _, c := range []string{"sh", "ls", "id", "dirname", "tr", "uname", "gunzip", "gzip", "base64", "sha256sum", "wc", "mkdir", "mv", "chmod", "rm", "cat", "stat", "head", "tail", "dd", "mktemp", "timeout", "readlink", "cut", "sort", "sed", "grep", "cmp", "xargs", "true"} {
		must(t, os.WriteFile(filepath.Join(dir, c), []byte("#!"+bb+" sh\nexec "+bb+" "+c+` "$@"`+"\n"), 0o755))
	}
	out["busybox"] = []string{bb, "sh", "-c", "PATH=" + dir + ":$PATH; export PATH; exec " + bb + ` sh "$@"`, "busybox-sh"}
	return out
}

// The install's host scripts under each shell: where.sh names the place
// by the platform, loose.sh passes a safe agent and refuses a loose one,
// install.sh copies gzip'd input whole or in parts and refuses a corrupt
// or partial one, leaving nothing behind.
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
			// the platform the laptop last heard (the launcher's $6) names
			// the place while an agent is there, with no uname: a platform
			// other than this one's proves it; one with no agent there, or
			// not a platform's word (with an agent at the place it would
			// name), leaves it to uname
			where := whereScript + `printf '%s|%s|%s\n' "$os" "$arch" "$ab"`
			place := func(plat string) string {
				return home + "/.cache/synthwatch/agent/" + strings.TrimPrefix(AgentProto, "synthwatch-agent/") + "-" + plat // not cleaned: as the shell names it
			}
			byUname := "linux|" + runtime.GOARCH + "|" + agentDir(home) + "/synthwatch\n"
			for _, tc := range []struct{ hint, want string }{
				{"linux-riscv64", "linux|riscv64|" + place("linux-riscv64") + "/synthwatch\n"},
				{"linux-mips", byUname},
				{"../../x-y", byUname},
				{"linux-riscv64-x", byUname},
				{"Linux-riscv64", byUname},
				{"linux-riscv64\n", byUname},
				{"-riscv64", byUname},
			} {
				if tc.hint != "linux-mips" {
					must(t, os.MkdirAll(place(tc.hint), 0o700))
					must(t, os.WriteFile(place(tc.hint)+"/synthwatch", nil, 0o700))
				}
				if _, err := os.Stat(place(tc.hint) + "/synthwatch"); (err == nil) != (tc.hint != "linux-mips") {
					t.Fatalf("the agent at %q: %v", tc.hint, err)
				}
				if out, _, _ := run(where, nil, "", "", AgentProto, "", "", tc.hint); out != tc.want {
					t.Errorf("where.sh with the platform %q: %q, want %q", tc.hint, out, tc.want)
				}
			}
			must(t, os.RemoveAll(filepath.Join(home, ".cache")))
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
			// in parts, each on its own exec, then joined; a join short of a part fails and leaves nothing
			must(t, os.Remove(filepath.Join(dir, "synthwatch")))
			args := []string{dir, hex.EncodeToString(sum[:]), strconv.Itoa(len(payload)), "1"}
			z, third := gz.Bytes(), (gz.Len()+2)/3
			for _, try := range []struct {
				parts []int
				ok    bool
			}{{[]int{0, 2}, false}, {[]int{2, 0, 1}, true}} {
				for _, i := range try.parts {
					part := z[i*third : min(len(z), (i+1)*third)]
					if _, errb, code := run(installScript, part, append(args, "part", "00ff", strconv.Itoa(i), strconv.Itoa(len(part)))...); code != 0 {
						t.Fatalf("part %d: exit %d %s", i, code, errb)
					}
				}
				_, errb, code := run(installScript, nil, append(args, "join", "00ff", "3")...)
				got, _ := os.ReadFile(filepath.Join(dir, "synthwatch"))
				if ents, _ := os.ReadDir(dir); (code == 0) != try.ok || bytes.Equal(got, payload) != try.ok || len(ents) != map[bool]int{true: 1, false: 0}[try.ok] {
					t.Fatalf("parts %v joined: exit %d %s, %d files left", try.parts, code, errb, len(ents))
				}
			}
			if _, errb, code := run(installScript, nil, append(args, "part", "00ff;x", "0", "1")...); code == 0 || !strings.Contains(errb, "hex") {
				t.Fatalf("a part named by more than hex: exit %d %s", code, errb)
			}
			if _, errb, code := run(installScript, []byte("x"), append(args, "part", "00bb", "0", "2")...); code == 0 || !strings.Contains(errb, "cut short") {
				t.Fatalf("a part cut short (the link gone): exit %d %s", code, errb)
			}
			run(installScript, []byte("x"), append(args, "part", "00aa", "0", "1")...)
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Fatalf("a part cut short was kept, or a whole one was not: %d files", len(ents))
			}
			if _, errb, code := run(installScript, nil, append(args, "clean", "00aa", "0")...); code != 0 {
				t.Fatalf("clean: exit %d %s", code, errb)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("clean left %d files", len(ents))
			}
			// a join that took removes its parts and those of an install cut
			// off a day ago, never a concurrent install's
			run(installScript, []byte("x"), append(args, "part", "00cc", "0", "1")...)
			run(installScript, []byte("y"), append(args, "part", "00ee", "0", "1")...)
			old := time.Now().Add(-49 * time.Hour)
			must(t, os.Chtimes(filepath.Join(dir, ".synthwatch.part-00cc-0"), old, old))
			for i := range 3 {
				part := z[i*third : min(len(z), (i+1)*third)]
				run(installScript, part, append(args, "part", "00dd", strconv.Itoa(i), strconv.Itoa(len(part)))...)
			}
			if _, errb, code := run(installScript, nil, append(args, "join", "00dd", "3")...); code != 0 {
				t.Fatalf("join: exit %d %s", code, errb)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 || ents[0].Name() != ".synthwatch.part-00ee-0" {
				t.Fatalf("after a join, want the agent and the concurrent install's part: %v", ents)
			}
			check := whereScript + looseScript + `if loose "$ab"; then echo "loose $bad"; else echo safe; fi`
			if out, _, _ := run(check, nil, "", "", AgentProto); out != "safe\n" {
				t.Fatalf("a safe agent: %q", out)
			}
			must(t, os.Chmod(filepath.Dir(dir), 0o777))
			if out, _, _ := run(check, nil, "", "", AgentProto); !strings.HasPrefix(out, "loose drwxrwxrwx 0 "+filepath.Dir(dir)) && !strings.HasPrefix(out, "loose drwxrwxrwx "+strconv.Itoa(os.Getuid())+" "+filepath.Dir(dir)) {
				t.Fatalf("a folder anyone may write: %q", out)
			}
			ab := filepath.Join(dir, "synthwatch") // loose too: the nearest is named, as a walk up from it would
			must(t, os.Chmod(ab, 0o775))
			if out, _, _ := run(check, nil, "", "", AgentProto); !strings.HasPrefix(out, "loose -rwxrwxr-x ") || !strings.HasSuffix(out, " "+ab+"\n") {
				t.Fatalf("a group-writable agent in a folder anyone may write: %q", out)
			}
			must(t, os.Chmod(ab, 0o700))
			must(t, os.Chmod(filepath.Dir(dir), 0o700))
			// a folder on the way that is another user's (test -O's case)
			// and an agent that is a link (its mode's); root's own pass
			if os.Getuid() != 0 {
				if os.Getenv("CI") == "true" {
					t.Fatal("another user's folder needs root (chown)")
				}
				return
			}
			must(t, os.Chown(filepath.Dir(dir), 65534, 65534))
			if out, _, _ := run(check, nil, "", "", AgentProto); out != "loose drwx------ 65534 "+filepath.Dir(dir)+"\n" {
				t.Fatalf("a folder of another user's: %q", out)
			}
			must(t, os.Chown(filepath.Dir(dir), 0, 0))
			must(t, os.Rename(ab, ab+".real"))
			must(t, os.Symlink(ab+".real", ab))
			if out, _, _ := run(check, nil, "", "", AgentProto); !strings.HasPrefix(out, "loose lrwxrwxrwx 0 "+ab) {
				t.Fatalf("an agent that is a link: %q", out)
			}
		})
	}
}

// The fallback (host/fallback.sh, the one-shot batch) under each shell:
// one exec answers a tail, host and laptop counts, a glob, a cat, a
// missing file, a FIFO (refused, never opened: it would wait for a
// writer), a command and a realpath, after a login banner without a
// newline, and leaves nothing behind in TMPDIR; sent as it is and packed
// (PackCommand: unpacked by the shell, base64 and gzip -d), alike.
func TestFallbackEveryShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "server log")
	writeFile(t, log, strings.Repeat("line\n", 3000)+"last")
	big := filepath.Join(dir, "cat", "raw.jsonl")
	must(t, os.MkdirAll(filepath.Dir(big), 0o755))
	writeFile(t, big, strings.Repeat(`{"id":"x"}`+"\n", 20000))
	small := filepath.Join(dir, "cat", "it's.jsonl")
	writeFile(t, small, "{}\n{}\n")
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	for name, shell := range hostShells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := &Batch{}
			tl := NewTail(log)
			tl.StartBack = 100
			b.Tail(tl)
			cb := NewCounter(big)
			cb.RemoteAbove = 1 << 10
			b.Count(cb)
			b.Count(NewCounter(small))
			b.Glob(filepath.Join(dir, "*", "raw.jsonl"), dir, "raw.jsonl")
			b.Cat(filepath.Join(dir, "gone"), 100)
			b.Cat(fifo, 100)
			b.Exec("sh", "-c", "echo out; echo err >&2; exit 3")
			b.RealPath(filepath.Join(dir, "cat", ".."))
			argv := b.Argv() // sh -c SCRIPT NAME NONCE OPS...
			f := filepath.Join(t.TempDir(), "fallback.sh")
			must(t, os.WriteFile(f, []byte(argv[2]), 0o600))
			packed, ok := PackCommand(argv, MaxLine)
			if !ok {
				t.Fatal("the batch does not pack within MaxLine")
			}
			for _, how := range [][]string{append([]string{f}, argv[4:]...), packed[1:]} {
				checkFallbackAnswer(t, b, exec.Command(shell[0], append(append([]string{}, shell[1:]...), how...)...), dir, log, big, small, fifo)
			}
		})
	}
}

// checkFallbackAnswer runs cmd, TestFallbackEveryShell's batch b, and
// checks its answers.
func checkFallbackAnswer(t *testing.T, b *Batch, cmd *exec.Cmd, dir, log, big, small, fifo string) {
	t.Helper()
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	a, err := parseBatchOf(append([]byte("Welcome to the GPU host!"), out...), b, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !a.unpack.said || !a.unpack.ok {
		t.Errorf("unpack: %+v, want said and ok (base64 and gzip are here)", a.unpack)
	}
	if r := a.reads[log]; len(r) == 0 || !strings.HasSuffix(string(r[0].data), "line\nlast") || r[0].off != 3000*5+4-101 || !r[0].eof {
		t.Errorf("tail: %+v", r)
	}
	if c := a.counts[big]; c.lines != 20000 || c.n != 20000*11 || c.err != "" {
		t.Errorf("host count: %+v", c)
	}
	if r := a.reads[small]; len(r) != 1 || string(r[0].data) != "{}\n{}\n" {
		t.Errorf("small count's read: %+v", r)
	}
	if g := a.globs[filepath.Join(dir, "*", "raw.jsonl")]; len(g.paths) != 1 || g.paths[0] != big {
		t.Errorf("glob: %+v", g)
	}
	if r := a.reads[filepath.Join(dir, "gone")]; len(r) != 1 || !errors.Is(r[0].err, fs.ErrNotExist) {
		t.Errorf("gone: %+v", r)
	}
	if r := a.reads[fifo]; len(r) != 1 || r[0].err == nil || !strings.Contains(r[0].err.Error(), "FIFO") {
		t.Errorf("fifo: %+v", r)
	}
	if x, ok := a.execs[CommandLine("sh", "-c", "echo out; echo err >&2; exit 3")]; !ok || string(x.Stdout) != "out\n" || string(x.Stderr) != "err\n" || x.ExitCode != 3 {
		t.Errorf("exec: %+v", x)
	}
	if p := a.real[filepath.Join(dir, "cat", "..")]; p.err != nil || p.target != dir {
		t.Errorf("realpath: %+v", p)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v", ents)
	}
}

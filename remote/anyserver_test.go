package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// servers starts each SSH server a user's host may run: OpenSSH's sshd and
// Dropbear (Debian's dropbear-bin, minimal and container hosts).
var servers = map[string]func(testing.TB, ...sshdtest.Option) *sshdtest.Server{
	"openssh":  sshdtest.Start,
	"dropbear": sshdtest.StartDropbear,
	"dropbear-nosftp": func(t testing.TB, o ...sshdtest.Option) *sshdtest.Server {
		return sshdtest.StartDropbear(t, append(o, sshdtest.WithoutSFTP())...)
	},
}

// What a poll and an action need of the host, on every server: commands
// with arguments longer than any command line a server takes (they travel
// on stdin), exit codes and stderr, a stream whose long script comes before
// the requests it reads on stdin, the server's port forwarded, and the
// host agent and the fallback packed answering as the fallback does.
func TestAnySSHServer(t *testing.T) {
	t.Parallel()
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			h := dial(t, opts(t, s))
			ctx := context.Background()

			long := strings.Repeat("x'\"$(no)`y`\\ ", 2000) + "\n\n" // 26 KB, ends in newlines ($( ) would strip them)
			r, err := h.Exec(ctx, "sh", "-c", `printf '%s|%s|%s' "$1" "$2" "$3"`, "sh", long, "short", long)
			if err != nil || r.ExitCode != 0 || string(r.Stdout) != long+"|short|"+long {
				t.Fatalf("long arguments: exit %d err %v, %d bytes back (want %d): %.80q", r.ExitCode, err, len(r.Stdout), 2*len(long)+7, r.Stdout)
			}
			r, err = h.Exec(ctx, "sh", "-c", "echo err >&2; exit 7"+strings.Repeat(" ", MaxLine))
			if err != nil || r.ExitCode != 7 || string(r.Stderr) != "err\n" {
				t.Fatalf("exit status of a long script: %+v %v", r, err)
			}

			st, err := h.Stream(ctx, io.Discard, "sh", "-c", "read -r a; echo \"got $a\""+strings.Repeat(" ", MaxLine))
			if err != nil {
				t.Fatal(err)
			}
			io.WriteString(st, "request 1\n")
			out, _ := io.ReadAll(st)
			st.Close()
			if string(out) != "got request 1\n" {
				t.Fatalf("stream after a long script: %q", out)
			}

			forwardedMetrics(t, h)

			dir := t.TempDir()
			bin := make([]byte, 3<<20) // a deploy: the binary, whatever its bytes
			for i := range bin {
				bin[i] = byte(i * 7 % 251)
			}
			dest := filepath.Join(dir, "bin", "synthwatch")
			must(t, os.MkdirAll(filepath.Dir(dest), 0o755))
			must(t, h.WriteFile(ctx, dest, bin, 0o755))
			if got, err := os.ReadFile(dest); err != nil || string(got) != string(bin) {
				t.Fatalf("written file: %d bytes, %v", len(got), err)
			}
			if fi, _ := os.Stat(dest); fi.Mode().Perm() != 0o755 {
				t.Fatalf("written mode %v", fi.Mode())
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "bin", ".*")); len(left) != 0 {
				t.Fatalf("temp files left: %v", left)
			}

			for i, n := range []string{"B1", "with space", "ünï"} {
				must(t, os.MkdirAll(filepath.Join(dir, "prepared", n), 0o755))
				writeFile(t, filepath.Join(dir, "prepared", n, "raw.jsonl"), strings.Repeat("{\"id\":1}\n", 10*(i+1)))
			}
			log := filepath.Join(dir, "log")
			writeFile(t, log, strings.Repeat("line\n", 3000))
			batch := func() *Batch {
				b := &Batch{}
				b.Glob(filepath.Join(dir, "prepared", "*", "raw.jsonl"), filepath.Join(dir, "prepared"), "raw.jsonl")
				tl := NewTail(log)
				tl.StartBack = 1000
				b.Tail(tl)
				b.Each(filepath.Join(dir, "prepared"), []*Tail{NewTail("raw.jsonl")}, []*Counter{NewCounter("raw.jsonl")})
				return b
			}
			b := batch()
			res, err := h.Exec(ctx, b.Argv()...)
			must(t, err)
			want, err := parseBatchOf(res.Stdout, b, nil)
			must(t, err)
			pb := batch() // packed, whole on the command line (PackCommand): alike
			argv, ok := PackCommand(pb.Argv(), MaxLine)
			if !ok || !want.unpack.ok {
				t.Fatalf("packed: %v, the host unpacks: %+v", ok, want.unpack)
			}
			res, err = h.Exec(ctx, argv...)
			must(t, err)
			if got, err := parseBatchOf(res.Stdout, pb, nil); err != nil || answersText(got) != answersText(want) {
				t.Fatalf("packed: %v, its answers differ:\n--- only the packed\n%s\n--- only the plain\n%s", err, onlyIn(answersText(got), answersText(want)), onlyIn(answersText(want), answersText(got)))
			}
			ag := NewAgent(h)
			ag.UseBinary(selfAsBinary(t))
			defer ag.Close()
			for round := 0; round < 2; round++ {
				got, err := ag.Run(ctx, batch())
				if err != nil {
					t.Fatalf("agent, request %d: %v", round, err)
				}
				if g, w := answersText(got), answersText(want); g != w {
					t.Fatalf("request %d: the agent's answers differ from the one-shot's:\n--- only the agent's\n%s\n--- only the one-shot's\n%s", round, onlyIn(g, w), onlyIn(w, g))
				}
			}
			if !strings.Contains(answersText(want), "ünï") {
				t.Fatalf("the one-shot batch read nothing: %s", answersText(want))
			}
		})
	}
}

// The file reads of a host (stat, read at an offset, glob, readlink,
// realpath) answer alike over SFTP and, where the host has no SFTP server,
// through its shell: the same as this machine's own reads (Local), on
// files, /proc, a symlink, a missing path and a FIFO, which is never
// opened.
func TestFileReadsAnswerAlikeOnEveryServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "with space.jsonl")
	writeFile(t, f, strings.Repeat("{\"id\":1}\n", 500)+"tail\n\n")
	must(t, os.Symlink(f, filepath.Join(dir, "link")))
	must(t, os.MkdirAll(filepath.Join(dir, "sub dir"), 0o755))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o644))
	ctx := context.Background()
	type answer struct {
		what, got string
	}
	ask := func(h Host) []answer {
		var out []answer
		add := func(what string, v any, err error) {
			e := ""
			switch {
			case errors.Is(err, fs.ErrNotExist):
				e = "not exist"
			case errors.Is(err, ErrNotRegular):
				e = "not regular"
			case err != nil:
				e = "error"
			}
			out = append(out, answer{what, fmt.Sprintf("%v|%s", v, e)})
		}
		for _, p := range []string{f, filepath.Join(dir, "link"), filepath.Join(dir, "sub dir"), filepath.Join(dir, "nope"), fifo} {
			fi, err := h.Stat(ctx, p)
			add("stat "+p, []any{fi.Size, fi.ModTime.Unix(), fi.IsDir}, err)
		}
		for _, r := range []struct {
			p   string
			off int64
			n   int
		}{{f, 0, 20}, {f, 4490, 100}, {f, 1 << 20, 10}, {filepath.Join(dir, "link"), 9, 9}, {filepath.Join(dir, "nope"), 0, 10}, {fifo, 0, 10}} {
			b, err := h.ReadAt(ctx, r.p, r.off, r.n)
			add(fmt.Sprintf("read %s %d %d", r.p, r.off, r.n), string(b), err)
		}
		self, err := h.ReadAt(ctx, "/proc/1/cmdline", 0, 4)
		add("read /proc", len(self) > 0, err)
		g, err := h.Glob(ctx, filepath.Join(dir, "*"))
		slices.Sort(g) // SFTP's come in the directory's order
		add("glob", g, err)
		if l, ok := h.(Linker); ok {
			s, err := l.ReadLink(ctx, filepath.Join(dir, "link"))
			add("readlink", s, err)
			s, err = l.RealPath(ctx, filepath.Join(dir, "link"))
			add("realpath", s, err)
		}
		return out
	}
	want := ask(Local{})
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			s := start(t)
			got := ask(dial(t, opts(t, s)))
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s: %q, here %q", want[i].what, got[i].got, want[i].got)
				}
			}
		})
	}
}

// forwardedMetrics fetches a /metrics served on this machine's loopback
// through h's direct-tcpip forwarding, as the dashboard reads the server's
// port on the host, and checks the body came through whole.
func forwardedMetrics(t *testing.T, h Host) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sglang:gen_throughput 1\n") })}
	go srv.Serve(ln)
	defer srv.Close()
	c := http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return h.DialTCP(ctx, addr) }}}
	resp, err := c.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "sglang:gen_throughput 1\n" {
		t.Fatalf("forwarded body %q", body)
	}
}

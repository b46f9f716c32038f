package remote

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// execRec is an SSH host that keeps the argv of each Exec.
type execRec struct {
	*SSH
	argvs [][]string
}

func (h *execRec) Exec(ctx context.Context, argv ...string) (ExecResult, error) {
	h.argvs = append(h.argvs, argv)
	return h.SSH.Exec(ctx, argv...)
}

// Each server takes a command line of its LineLimit whole: OpenSSH's
// sshd 64 KiB, Dropbear 8,900 bytes (it cuts the link past 9,000). On
// OpenSSH a fallback batch that packs past MaxLine still goes packed on
// the line; on Dropbear it goes as it is, every word on stdin (hundreds of
// short ops made a line Dropbear cut, before); both are answered.
func TestLineLimitOnEachServer(t *testing.T) {
	testgate.E2E(t)
	t.Parallel()
	want := map[string]int{"openssh": OpenSSHMaxLine, "dropbear": MaxLine, "dropbear-nosftp": MaxLine}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			h := dial(t, opts(t, start(t)))
			ctx := context.Background()
			limit := LineLimit(h.ServerVersion())
			if limit != want[name] {
				t.Fatalf("%s (%q): line limit %d, want %d", name, h.ServerVersion(), limit, want[name])
			}
			// a line of the limit, as Exec frames it, exactly
			argv := func(n int) []string {
				return []string{"sh", "-c", `printf %s "$1" | wc -c`, "sh", strings.Repeat("y", n)}
			}
			n := limit
			for {
				line, stdin := WireCommand(framedArgv(execMark(), argv(n)), limit, false)
				if stdin == nil && len(line) == limit {
					break
				}
				if n--; n <= 0 {
					t.Fatal("no argument makes a line of the limit")
				}
			}
			r, err := h.Exec(ctx, argv(n)...)
			if err != nil || r.ExitCode != 0 || strings.TrimSpace(string(r.Stdout)) != strconv.Itoa(n) {
				t.Fatalf("a %d-byte line: exit %d, %v, %q %q", limit, r.ExitCode, err, r.Stdout, r.Stderr)
			}

			// a batch that packs past MaxLine (random names compress
			// little): whole on OpenSSH's line, packed; on Dropbear's it
			// cannot pack and goes as it is, its script on stdin
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "raw.jsonl"), "{}\n{}\n")
			batch := func() *Batch {
				b := &Batch{}
				b.Count(NewCounter(filepath.Join(dir, "raw.jsonl")))
				for i := range 300 {
					var r [16]byte
					rand.Read(r[:])
					b.Cat(filepath.Join(dir, strconv.Itoa(i)+hex.EncodeToString(r[:])), 100)
				}
				return b
			}
			rec := &execRec{SSH: h}
			fb := NewFallback(rec)
			fb.SetUnpack(true)
			b := batch()
			if err := fb.Run(ctx, b); err != nil {
				t.Fatal(err)
			}
			if c := b.PollAsks().counts; len(c) != 1 {
				t.Fatalf("%s: the fallback's batch answered no count", name)
			}
			for _, a := range b.PollAsks().counts {
				if !a.Answered() {
					t.Fatalf("%s: the fallback's batch answered no count", name)
				}
			}
			sent := rec.argvs[len(rec.argvs)-1]
			line, stdin := WireCommand(framedArgv(execMark(), sent), limit, false)
			switch {
			case name == "openssh" && (!packed(sent) || stdin != nil || len(line) <= MaxLine):
				t.Fatalf("openssh: packed %v, a line of %d bytes, %d on stdin; want packed, past MaxLine, whole", packed(sent), len(line), len(stdin))
			case name != "openssh" && (packed(sent) || stdin == nil):
				t.Fatalf("%s: packed %v, %d bytes on stdin; want as it is, on stdin", name, packed(sent), len(stdin))
			}
		})
	}
}

// A line past MaxLine goes whole only when every login shell reads it as
// sh does: no newline (csh), no backslash before a backslash or a quote
// inside single quotes (fish). Quote puts every backslash outside the
// quotes, so its words are portable but for a newline; a packed command is
// one.
func TestPortableLine(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`sh -c 'printf '\''\n%s\n'\'' "$1"' x`, true},
		{"sh -c 'echo a\necho b'", false},
		{`awk '/[^"\\]/'`, false},
		{`echo 'ends in \'`, false},
		{`echo 'a\b'`, true},
		{`echo a\'b`, true},
		{`echo 'a!b'`, false},
		{`echo a\!b`, true},
	} {
		if got := portable(c.line); got != c.want {
			t.Errorf("%q: portable %v, want %v", c.line, got, c.want)
		}
	}
	for _, w := range []string{`[^"\\]*`, `ends in \`, `a\'b`, "x'\\'y", "$HOME `id`"} {
		if l := CommandLine("printf", "%s", w); !portable(l) {
			t.Errorf("%q quoted as %q: not portable", w, l)
		}
	}
	b := &Batch{}
	b.Cat("/proc/loadavg", 100)
	if portable(CommandLine(b.Argv()...)) {
		t.Error("the fallback's script, as it is, taken for portable")
	}
	if argv, ok := PackCommand(b.Argv(), MaxLine); !ok || !portable(CommandLine(framedArgv(execMark(), argv)...)) {
		t.Errorf("a packed command, framed, is not portable (%v)", ok)
	}
}

// Words read back from stdin leave what follows them there, under every
// host shell: busybox's head -c reads ahead on a pipe, so a long word with
// an ExecInput's data or a stream's requests behind it is read by the
// shell's read. Both shapes: one long word, and every word (hundreds of
// short ones). And bash as sh (Fedora, Arch) in a UTF-8 locale, whose
// read took a lone lead byte before a newline for a character's start and
// the newline with it, and what followed.
func TestStdinWordsLeaveWhatFollows(t *testing.T) {
	t.Parallel()
	// quotes, a backslash, newlines, a lone UTF-8 lead byte before one,
	// trailing ones
	long := strings.Repeat("x'\\\"$`y\n", 1200) + "\xc3\n\xe9\n\n"
	many := []string{"sh", "-c", `printf '%s|' "$@"; printf '#'; cat`, "sh"}
	for i := range 600 {
		many = append(many, "w"+strconv.Itoa(i)+" 'q'\n")
	}
	cases := map[string][]string{
		"one long word": {"sh", "-c", many[2], "sh", long, "short"},
		"every word":    many,
	}
	const after = "after the words\nand its end"
	shells := hostShells(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(bash, filepath.Join(bin, "sh")); err != nil {
		t.Fatal(err)
	}
	shells["bash as sh, UTF-8"] = []string{bash, "-c", "PATH=" + bin + ":$PATH LC_ALL=C.UTF-8; export PATH LC_ALL; exec bash \"$@\"", "bash-sh"}
	for shName, shell := range shells {
		for name, argv := range cases {
			t.Run(shName+"/"+name, func(t *testing.T) {
				t.Parallel()
				line, stdin := WireCommand(argv, MaxLine, true)
				if len(line) > MaxLine || stdin == nil {
					t.Fatalf("a line of %d, %d bytes on stdin: want words on stdin", len(line), len(stdin))
				}
				cmd := exec.Command(shell[0], append(append([]string{}, shell[1:]...), "-c", line)...)
				cmd.Stdin = strings.NewReader(string(stdin) + after)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %.300q", err, out)
				}
				want := strings.Join(argv[4:], "|") + "|#" + after
				if string(out) != want {
					t.Fatalf("got %d bytes, want %d:\n got %.200q…%.200q\nwant …%.200q", len(out), len(want), out, out[max(0, len(out)-200):], want[max(0, len(want)-200):])
				}
			})
		}
	}
}

// Every login shell a host may give reads Quote's words as sh does: the
// exec's line passes through it before sh. Words that shells read
// otherwise: backslashes and quotes (fish), "!" (tcsh, even inside single
// quotes), a leading "=" (zsh, tcsh) or "%" (fish).
func TestQuotedWordsReadAlikeByEveryShell(t *testing.T) {
	t.Parallel()
	words := []string{"plain", "=ls", "=1", "%self", "%1", "a=b", "50%", "a!b", "!!", "x!1", "!$", `a\b`, `\\`, `\'`, `ends in \`, "it's", `"$HOME"`, "`id`", "$(id)", "~", "*", "a b", "tab\there", "{a,b}", "#c", "[x]", "semi;colon", "é ü"}
	argv := append([]string{"printf", `%s\n`}, words...)
	line := CommandLine(argv...)
	want := strings.Join(words, "\n") + "\n"
	for _, sh := range []string{"sh", "bash", "zsh", "fish", "tcsh", "busybox"} {
		p := testgate.Tool(t, sh, "a login shell of a host")
		args := []string{"-c", line}
		if sh == "busybox" {
			args = append([]string{"sh"}, args...)
		}
		out, err := exec.Command(p, args...).CombinedOutput()
		if err != nil || string(out) != want {
			t.Errorf("%s: %v\n got %q\nwant %q", sh, err, out, want)
		}
	}
}

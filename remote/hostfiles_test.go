package remote

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Every host file says what it is before its code (the shell line, then,
// in its head of comments, its name and arguments), and HostScript sends only code, with an
// included file's code in place of its ". ./NAME.sh" line.
func TestHostFilesHeadedAndSentAsCode(t *testing.T) {
	names, err := fs.Glob(hostFiles, "host/*.sh")
	if err != nil || len(names) < 10 {
		t.Fatalf("host files: %v %v", names, err)
	}
	for _, n := range names {
		src, _ := hostFiles.ReadFile(n)
		base := filepath.Base(n)
		head, named := string(src), false
		for i, l := range strings.Split(head, "\n") {
			if !strings.HasPrefix(l, "#") || (i == 0 && !strings.HasPrefix(l, "# shellcheck shell=sh")) {
				break
			}
			named = named || strings.HasPrefix(l, "# "+base)
		}
		if !named {
			t.Errorf("%s does not begin with its shell, then its name", n)
		}
		for _, l := range strings.Split(HostScript(base), "\n") {
			if strings.HasPrefix(l, "#") || strings.HasPrefix(l, ". ./") || strings.HasPrefix(l, " ") {
				t.Errorf("%s sends %q", n, l)
			}
		}
	}
	check := HostScript("launchcheck.sh")
	if l := HostScript("preflight.sh"); !strings.Contains(l, "shift 3\n"+check+"exit 0\n") {
		t.Errorf("preflight.sh without launchcheck.sh inline:\n%s", l)
	}
}

// The host files of the reads a host with no agent answers by exec, under
// each shell: count.sh's newlines in a whole file and in ranges, readat.sh's
// bytes (a FIFO refused, never opened), writable.sh's nearest folder and
// space, holders.sh's descriptors open on a file.
func TestHostFilesEveryShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := filepath.Join(dir, "it's a file")
	writeFile(t, f, "one\ntwo\nthree\nfour")
	link := filepath.Join(dir, "link") // a category's file may be a symlink: its size is the target's
	must(t, os.Symlink(f, link))
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	held, err := os.Open(f)
	must(t, err)
	t.Cleanup(func() { held.Close() })
	for name, shell := range hostShells(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run := func(file string, args ...string) (string, int) {
				t.Helper()
				p := filepath.Join(t.TempDir(), file)
				must(t, os.WriteFile(p, []byte(HostScript(file)), 0o600))
				cmd := exec.Command(shell[0], append(append(append([]string{}, shell[1:]...), p), args...)...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				if ee, ok := err.(*exec.ExitError); ok {
					return out.String(), ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return out.String(), 0
			}
			out, _ := run("count.sh", f, "1", "18", f, "5", "8", f, "5", "99", link, "1", "18")
			for _, want := range []string{"1 3 18\n", "2 1 12\n", "3 ! read 14 of 99 bytes from byte 5\n", "4 3 18\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("count.sh: %q, want %q in it", out, want)
				}
			}
			if out, code := run("readat.sh", f, "5", "3"); out != "two" || code != 0 {
				t.Errorf("readat.sh: %q exit %d", out, code)
			}
			if out, code := run("readat.sh", fifo, "1", "3"); out != "FIFO\n" || code != exitNotRegular {
				t.Errorf("readat.sh of a FIFO: %q exit %d", out, code)
			}
			if _, code := run("readat.sh", filepath.Join(dir, "gone"), "1", "3"); code != exitMissing {
				t.Errorf("readat.sh of nothing: exit %d", code)
			}
			out, _ = run("writable.sh", filepath.Join(dir, "not", "yet"))
			if !strings.HasPrefix(out, "@dir\t"+dir+"\n") || !strings.Contains(out, "\n@df\t") || strings.Contains(out, "@nowrite") {
				t.Errorf("writable.sh: %q", out)
			}
			out, _ = run("holders.sh", "-lname", GlobEscape(f))
			if want := strconv.Itoa(os.Getpid()) + " " + strconv.Itoa(int(held.Fd())) + " "; !strings.Contains(out, want) || !strings.HasSuffix(out, " "+f+"\n") {
				t.Errorf("holders.sh: %q, want %q…%s", out, want, f)
			}
		})
	}
}

package remote

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// allHosts runs a test against Local, keptLocal (kept handles that follow
// the inode) and the SSH host over a real sshd.
func allHosts(t *testing.T, f func(t *testing.T, h Host)) {
	t.Run("local", func(t *testing.T) { f(t, Local{}) })
	t.Run("kept-local", func(t *testing.T) { k := newKeptLocal(); k.statDelay = 0; f(t, k) })
	t.Run("ssh", func(t *testing.T) {
		s := sshdtest.Start(t)
		f(t, dial(t, opts(t, s)))
	})
}

func recs(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, `{"id":%d,"category":"B1","run":"r%d","completion_tokens":%d,"content":"%s"}`+"\n", i, i%7, 100+i, strings.Repeat("x", i%50))
	}
	return b.String()
}

// pollOne polls counters once and fails on an error.
func pollCounts(t *testing.T, h Host, cs ...*Counter) []CountUpdate {
	t.Helper()
	res := (&Poller{Counters: cs}).Poll(context.Background(), h)
	for _, u := range res.Counts {
		if u.Err != nil {
			t.Fatalf("%s: %v", u.Path, u.Err)
		}
	}
	return res.Counts
}

// The worker's RepairTail cuts a NUL tail left by a crash and appends new
// records; the file passes its old size before the next poll. The cut
// range held no newline when it was counted: the count must see the new
// records there (integrity #9: 366/400 while wc -l said 400).
func TestCounterNoticesACutTailThatRegrewPastItsSize(t *testing.T) {
	t.Parallel()
	allHosts(t, func(t *testing.T, h Host) {
		dir := t.TempDir()
		small, big := filepath.Join(dir, "small.jsonl"), filepath.Join(dir, "big.jsonl")
		for _, p := range []string{small, big} {
			writeFile(t, p, recs(0, 366)+strings.Repeat("\x00", 8<<10))
		}
		cs := []*Counter{NewCounter(small), NewCounter(big)}
		cs[1].RemoteAbove = 1 << 10 // counted on the host, the first time and after
		for i, u := range pollCounts(t, h, cs...) {
			if u.Lines != 366 {
				t.Fatalf("%d: before the cut: %d lines", i, u.Lines)
			}
		}
		for _, p := range []string{small, big} {
			data, _ := os.ReadFile(p)
			keep := bytes.LastIndexByte(data, '\n') + 1
			if err := os.Truncate(p, int64(keep)); err != nil {
				t.Fatal(err)
			}
			appendFile(t, p, recs(366, 500)) // past the old size
			if st, _ := os.Stat(p); st.Size() <= int64(len(data)) {
				t.Fatalf("the file did not pass its old size: %d <= %d", st.Size(), len(data))
			}
		}
		for _, u := range pollCounts(t, h, cs...) {
			if want := wcL(t, u.Path); u.Lines != want || !u.Reset {
				t.Fatalf("%s after the cut: %d lines (reset %v), wc -l says %d", filepath.Base(u.Path), u.Lines, u.Reset, want)
			}
		}
		appendFile(t, small, recs(500, 510))
		appendFile(t, big, recs(500, 510))
		for _, u := range pollCounts(t, h, cs...) {
			if want := wcL(t, u.Path); u.Lines != want || u.Reset {
				t.Fatalf("%s: growth after the recount: %d lines (reset %v), wc -l says %d", filepath.Base(u.Path), u.Lines, u.Reset, want)
			}
		}
	})
}

// A file removed and written again, or replaced by rename, with more bytes
// than were counted: counted again from zero. So is one rewritten at the
// same size (its mtime moved).
func TestCounterNoticesAReplacedFile(t *testing.T) {
	t.Parallel()
	allHosts(t, func(t *testing.T, h Host) {
		dir := t.TempDir()
		p := filepath.Join(dir, "raw_responses.jsonl")
		writeFile(t, p, recs(0, 50))
		c := NewCounter(p)
		pollCounts(t, h, c)
		appendFile(t, p, recs(50, 60)) // hot: read ahead through a kept handle
		pollCounts(t, h, c)

		os.Remove(p)
		writeFile(t, p, strings.Repeat("\n", 10)+recs(0, 200)) // rm + a new, bigger file
		if u := pollCounts(t, h, c)[0]; u.Lines != 210 || !u.Reset {
			t.Fatalf("rm + new file: %+v", u)
		}
		writeFile(t, p+".new", "a\nb\nc\n"+recs(0, 300))
		must(t, os.Rename(p+".new", p)) // mv over
		if u := pollCounts(t, h, c)[0]; u.Lines != 303 || !u.Reset {
			t.Fatalf("mv over: %+v", u)
		}
		data, _ := os.ReadFile(p)
		same := bytes.ReplaceAll(data, []byte("}\n{"), []byte("} {")) // the same size, fewer lines
		writeFile(t, p+".new", string(same))
		st, _ := os.Stat(p)
		must(t, os.Chtimes(p+".new", st.ModTime().Add(5e9), st.ModTime().Add(5e9)))
		must(t, os.Rename(p+".new", p))
		if u := pollCounts(t, h, c)[0]; u.Lines != wcL(t, p) || !u.Reset {
			t.Fatalf("same size, new mtime: %+v, wc -l %d", u, wcL(t, p))
		}
		// nothing changed: the poll reads nothing, and says so
		if u := pollCounts(t, h, c)[0]; u.Lines != wcL(t, p) || u.Reset || u.Grew {
			t.Fatalf("quiet: %+v", u)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The Counter against a plain full count over random appends (whole and
// torn lines), NUL tails, cuts (RepairTail's, to the last newline, or
// anywhere) followed by growth, replacements (rename, rm) and removals,
// several between two polls; and rewrites at the same size. Two files get
// the same changes: one counted over SFTP (or read), one on the host.
func TestCounterMatchesAFullCountDifferential(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	t.Parallel()
	allHosts(t, func(t *testing.T, h Host) {
		steps := 300 // SW_E2E=1 runs the full length; go test ./... a sample
		if _, ok := h.(*SSH); ok {
			steps = 100
		}
		if !testgate.E2EOn() {
			steps /= 6
		}
		for seed := uint64(1); seed <= 2; seed++ {
			r := rand.New(rand.NewPCG(seed, 42))
			dir := t.TempDir()
			paths := []string{filepath.Join(dir, "read.jsonl"), filepath.Join(dir, "host.jsonl")}
			cs := []*Counter{NewCounter(paths[0]), NewCounter(paths[1])}
			cs[1].RemoteAbove = 512 // the on-host path, most of the time
			var data []byte
			next := 0
			each := func(f func(p string) error) {
				t.Helper()
				for _, p := range paths {
					if err := f(p); err != nil && !os.IsNotExist(err) {
						t.Fatal(err)
					}
				}
			}
			grow := func(add string) {
				each(func(p string) error { appendFile(t, p, add); return nil })
				data = append(data, add...)
			}
			cut := func(keep int) {
				each(func(p string) error { return os.Truncate(p, int64(keep)) })
				data = data[:keep]
			}
			replace := func(nb []byte, how string) {
				each(func(p string) error {
					if how == "rm" {
						os.Remove(p)
						return os.WriteFile(p, nb, 0o644)
					}
					if err := os.WriteFile(p+".new", nb, 0o644); err != nil {
						return err
					}
					return os.Rename(p+".new", p)
				})
				data = nb
			}
			log := []string{"poll"}
			for step := 0; step < steps; step++ {
				ops := 1 + r.IntN(3) // several changes between two polls
			window:
				for range ops {
					switch op := r.IntN(20); {
					case op < 9: // append whole records, sometimes a torn one
						add := recs(next, next+1+r.IntN(30))
						next += 30
						if r.IntN(4) == 0 {
							add += `{"id":"torn","content":"` + strings.Repeat("t", r.IntN(300))
						}
						grow(add)
						log = append(log, "append")
					case op < 11: // a NUL tail, as a crash leaves
						grow(strings.Repeat("\x00", 1+r.IntN(9000)))
						log = append(log, "nul")
					case op < 14: // RepairTail: cut to the last newline, then new records
						cut(bytes.LastIndexByte(data, '\n') + 1)
						grow(recs(next, next+1+r.IntN(60)))
						next += 60
						log = append(log, "repair")
					case op < 15: // cut anywhere, then regrow
						if len(data) > 0 {
							cut(r.IntN(len(data)))
						}
						grow("\n" + recs(next, next+r.IntN(80)))
						next += 80
						log = append(log, "cut")
					case (op < 17 || op == 18) && log[len(log)-1] != "poll":
						// a replacement comes first in its interval: a kept
						// handle reads the old file's growth since the last
						// poll until the path's file outgrows it (see Counter)
						log = append(log, "nothing")
					case op < 16:
						replace([]byte(strings.Repeat("\n", r.IntN(5))+recs(r.IntN(1000), 1000+r.IntN(100))), "rename")
						log = append(log, "rename")
					case op < 17:
						replace([]byte(recs(r.IntN(100), 100+r.IntN(200))), "rm")
						log = append(log, "rm")
					case op < 18 && log[len(log)-1] == "poll" && len(data) > 0:
						// the same size, other bytes, a later mtime (not after
						// growth in the same interval: see Counter)
						nb := bytes.ReplaceAll(data, []byte("\n{"), []byte(" {"))
						each(func(p string) error {
							st, err := os.Stat(p)
							if err != nil {
								return err
							}
							if err := os.WriteFile(p, nb, 0o644); err != nil {
								return err
							}
							return os.Chtimes(p, st.ModTime().Add(2e9), st.ModTime().Add(2e9))
						})
						data = nb
						log = append(log, "same-size")
						break window
					case op == 18:
						each(os.Remove)
						data = nil
						log = append(log, "remove")
					default:
						log = append(log, "nothing")
					}
				}
				log = append(log, "poll")
				want := int64(bytes.Count(data, []byte{'\n'}))
				for i, u := range (&Poller{Counters: cs}).Poll(context.Background(), h).Counts {
					if u.Err != nil {
						t.Fatalf("seed %d step %d %s: %v", seed, step, filepath.Base(paths[i]), u.Err)
					}
					if u.Lines != want {
						t.Fatalf("seed %d step %d %s: %d lines, a full count says %d (last ops %v)", seed, step, filepath.Base(paths[i]), u.Lines, want, log[max(0, len(log)-8):])
					}
				}
			}
		}
	})
}

// The host's count script says when it could not read a file, instead of
// counting 0 lines (sh has no pipefail): one file's failure is that file's.
func TestHostCountScriptReportsReadFailures(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		dir := t.TempDir()
		good, gone, isDir := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "gone.jsonl"), filepath.Join(dir, "dir.jsonl")
		writeFile(t, good, recs(0, 100))
		must(t, os.Mkdir(isDir, 0o755))
		cs := []*Counter{NewCounter(good), NewCounter(gone), NewCounter(isDir)}
		rs := []rangeCount{
			{c: cs[0], pl: countPlan{n: 4000}},
			{c: cs[1], pl: countPlan{n: 4000}},
			{c: cs[2], pl: countPlan{n: 4000}},
		}
		for _, from := range []int64{0, 10} {
			for _, c := range cs {
				c.off = from
			}
			r, err := h.Exec(context.Background(), hostCountArgv(rs)...)
			if err != nil || r.ExitCode != 0 {
				t.Fatalf("exec: %v %+v", err, r)
			}
			ns, err := parseHostCounts(r.Stdout, len(rs))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(good)
			end := from + 4000
			if from == 0 {
				end = int64(len(data)) // from the start: the whole file, at its size
			}
			if want := int64(bytes.Count(data[from:end], []byte{'\n'})); ns[0].err != "" || ns[0].lines != want || ns[0].size != end {
				t.Fatalf("from %d: good file: %+v, want %d lines", from, ns[0], want)
			}
			if ns[1].err == "" || ns[2].err == "" {
				t.Fatalf("from %d: a failed read counted: %+v (stderr %q)", from, ns, r.Stderr)
			}
		}
		// a short file: fewer bytes than asked for is a failure too
		cs[0].off = 10
		rs[0].pl.n = 1 << 20
		r, _ := h.Exec(context.Background(), hostCountArgv(rs[:1])...)
		if ns, err := parseHostCounts(r.Stdout, 1); err != nil || ns[0].err == "" {
			t.Fatalf("short file: %+v %v", ns, err)
		}
	})
}

// A count that fails keeps the last good figure and says why; once the
// file is back, the count is the file's again.
func TestCounterFailureKeepsTheLastCountThenRecovers(t *testing.T) {
	t.Parallel()
	hosts(t, func(t *testing.T, h Host) {
		dir := t.TempDir()
		p := filepath.Join(dir, "raw_responses.jsonl")
		writeFile(t, p, recs(0, 80))
		small, big := NewCounter(p), NewCounter(p)
		big.RemoteAbove = 100
		pollCounts(t, h, small, big)
		must(t, os.Rename(p, p+".away"))
		must(t, os.Mkdir(p, 0o755)) // a directory where the file was
		for _, u := range (&Poller{Counters: []*Counter{small, big}}).Poll(context.Background(), h).Counts {
			if u.Err == nil || u.Lines != 80 {
				t.Fatalf("directory in place of the file: %+v", u)
			}
		}
		must(t, os.Remove(p))
		must(t, os.Rename(p+".away", p))
		appendFile(t, p, recs(80, 130))
		for _, u := range pollCounts(t, h, small, big) {
			if u.Lines != 130 {
				t.Fatalf("back: %+v", u)
			}
		}
	})
}

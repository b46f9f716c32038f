package remote

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/internal/testgate"
)

// A count's last bytes, read by dd and told a line end by the shell's
// read, and a first request's attaches (never stated): files whose ends
// hold a NUL, a CR, backslashes, bytes past 0x7f, no last newline, that
// are shorter than, exactly or just over the 129 bytes, that appear, go
// and come back between requests. Every request answers as the one-shot
// does, under dash, busybox, bash and without dd, and the Go agent.
func TestShellAgentCountEndsAndAttachesLikeTheOneShot(t *testing.T) {
	testgate.E2E(t)
	ends := map[string]string{
		"nul":     strings.Repeat("{\"id\":1}\n", 30) + "ab\x00c\n",
		"nul-ln":  strings.Repeat("y", 200) + "\n\x00\n",
		"nul-end": strings.Repeat("y\n", 100) + "\x00\x00",
		"cr":      strings.Repeat("line\r\n", 40),
		"bs":      strings.Repeat(`a\b\\c\n%s%b\c`+"\n", 20),
		"high":    strings.Repeat("\x80\xff\xfe ünï\n", 30),
		"no-nl":   strings.Repeat("z\n", 100) + "torn",
		"short":   "abcd\n",
		"one":     "\n",
		"128":     strings.Repeat("q", 127) + "\n",
		"129":     strings.Repeat("q", 128) + "\n",
		"130":     strings.Repeat("q", 129) + "\n",
		"nl-129":  "\n" + strings.Repeat("q", 127) + "\n",
		"big":     strings.Repeat("0123456789abcdef\\\r\x81\n", 400),
		"dash -n": strings.Repeat("-n -e\n", 40),
		"empty":   "",
	}
	run := func(t *testing.T, ag *Agent) {
		dir := t.TempDir()
		var files []string
		for name, s := range ends {
			f := filepath.Join(dir, name)
			writeFile(t, f, s)
			files = append(files, f)
		}
		comes := filepath.Join(dir, "comes and goes")
		files = append(files, comes)
		big := filepath.Join(dir, "answer near 64K")
		prev := map[string]int64{} // each file's size at the last request: where a poll reads from
		cur := 0
		batch := func() *Batch {
			b := &Batch{}
			b.Cat(big, 1<<20) // an answer just under, at or over 64 KB
			for i, f := range files {
				if (cur+i)%2 == 0 { // keys asked every other request: an attach after a request without it
					ta := NewTail(f)
					ta.StartBack = 7
					b.Tail(ta)
					b.Cat(f, 50)
				}
				at := NewTail(f)
				at.attached, at.off = true, prev[f] // the key an attach asked, now from a number
				b.Tail(at)
				c0 := NewCounter(f)
				c0.RemoteAbove, c0.off = 0, prev[f]
				b.Count(c0)
				c := NewCounter(f)
				c.RemoteAbove = 0 // counted on the host: the last bytes read there
				b.Count(c)
				b.Count(NewCounter(f))
				tl := NewTail(f)
				tl.StartBack = 100
				b.Tail(tl) // an attach of a key never asked (until it has been)
				b.Tail(NewTail(f))
				b.Tail(tl) // the same key twice in one request
			}
			return b
		}
		for round := 0; round < 5; round++ {
			writeFile(t, big, strings.Repeat("b\x00\n", (65536-120+round*40)/3))
			cur = round
			sameAsOneShotOn(t, ag, batch, round)
			for _, f := range files {
				prev[f] = 0
				if st, err := os.Stat(f); err == nil {
					prev[f] = st.Size()
				}
			}
			switch round {
			case 0: // grow by hostile bytes; the missing file comes
				for name, s := range ends {
					appendFile(t, filepath.Join(dir, name), s[len(s)/2:])
				}
				writeFile(t, comes, "here\r\n\x00\n")
			case 1: // shrink; the file goes
				for name, s := range ends {
					writeFile(t, filepath.Join(dir, name), s[:len(s)/3])
				}
				must(t, os.Remove(comes))
			case 2: // back as round 0 had them; the file comes back
				for name, s := range ends {
					writeFile(t, filepath.Join(dir, name), s)
				}
				writeFile(t, comes, strings.Repeat("x", 129)+"\n")
			case 3: // a NUL where the last line was
				for name, s := range ends {
					writeFile(t, filepath.Join(dir, name), s+"\x00tail\n")
				}
			}
		}
	}
	everyAgent(t, map[string]string{"no dd": noDDPath(t)}, run)
}

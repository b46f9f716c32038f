package counts

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"

	"github.com/synthwatch/synthwatch/parse"
)

// mixedRecords are records as the tools that write these files write
// them: the Go worker (sealed, compact, run first), Python's json.dumps
// (", " and ": "), other key orders, tokens nested in usage or meta_info or
// as a string, CRLF endings, text that quotes the keys, and lines that are
// no record (blank, torn, a null id); and records whose tokens are unknown:
// the worker's null (a stream cut before its usage chunk), the old
// script's None, the key missing, "n/a", 12.5, "12abc" (its usage then
// says), a null beside a usage that has them.
func mixedRecords(rng *rand.Rand, from, n int) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		tok := rng.IntN(5000)
		text := strings.Repeat("lorem ipsum ", rng.IntN(400))
		run := []string{"20260301T0100-111", "20260302T0200-222", "run with space"}[rng.IntN(3)]
		switch i % 15 {
		case 0, 1, 2:
			obj := fmt.Sprintf(`{"id":"B1-%d","category":"B1","run":%q,"prompt_tokens":10,"completion_tokens":%d,"finish_reason":"stop","content":%q}`, i, run, tok, text)
			b.Write(parse.SealRecord([]byte(obj)))
		case 3:
			fmt.Fprintf(&b, `{"id": "B1-%d", "category": "B1", "completion_tokens": %d, "text": %q}`+"\n", i, tok, text)
		case 4:
			fmt.Fprintf(&b, `{"text": "says \"completion_tokens\": 999 and \"run\": \"x\"", "meta_info": {"prompt_tokens": 3, "completion_tokens": %d}, "id": %d, "run": %q}`+"\r\n", tok, i, run)
		case 5:
			fmt.Fprintf(&b, `{"usage": {"completion_tokens": "%d"}, "id": "B1-%d"}`+"\n", tok, i)
		case 6:
			fmt.Fprintf(&b, "\n{\"id\": null, \"completion_tokens\": 7}\n")
		case 7:
			fmt.Fprintf(&b, `{"id":"B1-%d","run":%q,"completion_tokens":%d.0,"content":%q}`+"\r\n", i, run, tok, text)
		case 8:
			fmt.Fprintf(&b, "{\"id\": \"torn-%d\", \"completion_tok\n", i)
		case 9:
			obj := fmt.Sprintf(`{"id":"B1-%d","category":"B1","run":%q,"prompt_tokens":null,"completion_tokens":null,"finish_reason":"stop","content":%q}`, i, run, text)
			b.Write(parse.SealRecord([]byte(obj)))
		case 10:
			fmt.Fprintf(&b, `{"id": "B1-%d", "category": "B1", "completion_tokens": null, "usage": null, "text": %q}`+"\n", i, text)
		case 11:
			fmt.Fprintf(&b, `{"id": "B1-%d", "run": %q, "text": %q}`+"\n", i, run, text)
		case 12:
			fmt.Fprintf(&b, `{"id": "B1-%d", "completion_tokens": "n/a", "run": %q}`+"\r\n", i, run)
		case 13:
			fmt.Fprintf(&b, `{"id": "B1-%d", "completion_tokens": 12.5}`+"\n"+`{"id": "B1-%d.5", "completion_tokens": "12abc", "usage": {"completion_tokens": %d}}`+"\n", i, i, tok)
		case 14:
			fmt.Fprintf(&b, `{"id": "B1-%d", "completion_tokens": null, "usage": {"prompt_tokens": 3, "completion_tokens": %d}, "run": %q}`+"\n", i, tok, run)
		}
	}
	return b.String()
}

// fullDecode is the plain way: every whole line of the file decoded.
func fullDecode(t *testing.T, path string) tally {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	var sum tally
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		for _, l := range bytes.Split(data[:i], []byte{'\n'}) {
			tallyLine(&sum, l, 0, time.UTC)
		}
	}
	return sum
}

func equalTally(a, b tally) bool {
	if a.Tally != b.Tally || len(a.byRun) != len(b.byRun) {
		return false
	}
	for k, v := range a.byRun {
		if b.byRun[k] != v {
			return false
		}
	}
	return true
}

func byName(t *testing.T, cats []snapshot.Category, name string) snapshot.Category {
	t.Helper()
	for _, c := range cats {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no category %q in %+v", name, cats)
	return snapshot.Category{}
}

// TestTokenSumMatchesFullDecode grows a file in cuts that fall anywhere
// (mid-line too) and in bursts the count leaves to the host, and checks
// after every poll that whenever the tally says it covers the file, it is
// what a full decode of the file's whole lines gives.
func TestTokenSumMatchesFullDecode(t *testing.T) {
	seeds := uint64(1) // the quick suite one, CI's end-to-end run four
	if testgate.E2EOn() {
		seeds = 4
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			root := t.TempDir()
			dir := filepath.Join(root, "prepared", "B1")
			mkdir(t, dir)
			raw := filepath.Join(dir, "raw_responses.jsonl")
			all := mixedRecords(rng, 0, 400)
			cold := len(all) / 3
			write(t, raw, all[:cold]) // the cold start: counted (and summed) on the host
			now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
			k := newSet(root)
			checked, hostSums := 0, 0
			check := func() {
				t.Helper()
				v := byName(t, k.View(), "B1")
				if v.TokensFrom != snapshot.TokensFromRecords {
					return
				}
				want := fullDecode(t, raw)
				if got := k.cats["B1"].tok.sum; !equalTally(got, want) {
					t.Fatalf("after %d bytes: tally %+v, full decode %+v", k.cats["B1"].tok.cur, got, want)
				}
				if *v.CompletionTokens != want.Tokens {
					t.Fatalf("the view says %d tokens, full decode %d", *v.CompletionTokens, want.Tokens)
				}
				checked++
			}
			pollSet(t, k, localHost(), now, true)
			k.cats["B1"].raw.RemoteAbove = 8 << 10 // bursts over 8 KiB go to the host, as 256 KiB do in real life
			for off := cold; off < len(all); {
				n := rng.IntN(6 << 10) // read over the link
				if rng.IntN(5) == 0 {
					n = 8<<10 + rng.IntN(24<<10) // a burst: counted on the host
				}
				end := min(off+n, len(all))
				appendTo(t, raw, all[off:end])
				off = end
				now = now.Add(2 * time.Second)
				if k.cats["B1"].tok.hole {
					hostSums++ // this poll sums on the host
				}
				pollSet(t, k, localHost(), now, false)
				check()
			}
			for range 3 {
				now = now.Add(2 * time.Second)
				pollSet(t, k, localHost(), now, false)
				check()
			}
			if v := byName(t, k.View(), "B1"); v.TokensFrom != snapshot.TokensFromRecords {
				t.Fatalf("the tally never caught up: %+v (err %q)", v, k.cats["B1"].tok.err)
			}
			if checked < 5 || hostSums == 0 {
				t.Fatalf("checked %d polls, %d with host sums: the test did not exercise both paths", checked, hostSums)
			}
		})
	}
}

// TestTokenSumReadsEveryRecordFormat checks the host's awk alone against
// the full decode over the same bytes, including a range cut mid-line.
func TestTokenSumReadsEveryRecordFormat(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	dir := t.TempDir()
	p := filepath.Join(dir, "raw.jsonl")
	data := mixedRecords(rng, 0, 90)
	write(t, p, data)
	cut := int64(len(data) - 37) // inside the last line
	res, err := sumOnHost(t.Context(), localHost(), []*Job{{path: p, from: 0, n: cut}}, nil)
	must(t, err)
	var want tally
	whole := data[:strings.LastIndexByte(data[:cut], '\n')+1]
	for _, l := range strings.Split(strings.TrimSuffix(whole, "\n"), "\n") {
		tallyLine(&want, []byte(l), 0, time.UTC)
	}
	if !equalTally(res[0].t, want) || res[0].bytes != int64(len(whole)) {
		t.Fatalf("host sum %+v (%d bytes), full decode %+v (%d bytes)", res[0].t, res[0].bytes, want, len(whole))
	}
}

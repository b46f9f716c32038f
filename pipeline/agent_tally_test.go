package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

func trialRecs(cat string, from, n int, rng *rand.Rand) (string, int64) {
	var b strings.Builder
	var tok int64
	for i := from; i < from+n; i++ {
		ct := rng.Intn(1000)
		tok += int64(ct)
		fmt.Fprintf(&b, `{"id":"%s-%d","category":"%s","run":"r","prompt_tokens":10,"completion_tokens":%d,"finish_reason":"stop"}`+"\n", cat, i, cat, ct)
	}
	return b.String(), tok
}

// truth: the tokens of the whole lines of the file, as encoding/json
// reads them (jsonTruth), and its lines.
func trialTruth(t *testing.T, p string) (int64, int64) {
	b, err := os.ReadFile(p)
	if err != nil || len(b) == 0 {
		return 0, 0
	}
	tok, _ := jsonTruth(t, p)
	return tok, int64(bytes.Count(b, []byte{'\n'}))
}

// Through appends of every size (read over the link, counted on the host
// above 1 KiB and above 256 KiB), torn lines completed later, a rewrite and
// a rename over it, the agent's watcher's lines and tokens are the file's
// after every step (from the adversarial trial of the agent).
//
// The agent is the shell, and (end to end) the deployed binary: the same
// trial for both.
func TestAgentTallyMatchesTheFile(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Run("sh", func(t *testing.T) { tallyTrial(t, p, "") })
	t.Run("go", func(t *testing.T) { tallyTrial(t, p, testbin.Path(t)) })
}

func tallyTrial(t *testing.T, p *proxied, bin string) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			root := t.TempDir()
			raw := filepath.Join(root, "prepared", "B1", parse.RawFile)
			write(t, filepath.Join(root, "prepared", "B1", parse.PromptsFile), prompts("B1", 100000))
			s0, _ := trialRecs("B1", 0, 50, rng)
			write(t, raw, s0)
			hb := p.dial(t)
			t.Cleanup(func() { hb.Close() })
			c := newClock()
			o := Options{Host: "trial", Root: root, ServerURL: closedURL(t), WorkerBin: bin, Now: c.now}
			if bin == "" {
				o.WorkerBin = filepath.Join(t.TempDir(), "no-synthwatch") // the shell, whatever this machine has deployed
			}
			w := NewWatcher(hb, o, nil)
			id := 50
			torn := ""
			for step := 0; step < 40; step++ {
				var what string
				switch r := rng.Intn(10); {
				case r < 5:
					n := []int{1, 3, 9, 10, 40, 2000, 3000}[rng.Intn(7)]
					s, _ := trialRecs("B1", id, n, rng)
					id += n
					if torn != "" {
						s = torn + s
						torn = ""
					}
					what = fmt.Sprintf("append %d", n)
					appendTo(t, raw, s)
				case r < 7:
					s, _ := trialRecs("B1", id, 1+rng.Intn(20), rng)
					id += 1 + rng.Intn(20)
					cut := len(s) - 1 - rng.Intn(60)
					if torn != "" {
						break
					}
					appendTo(t, raw, s[:cut])
					torn = s[cut:]
					what = "torn"
				case r < 8:
					s, _ := trialRecs("B1", id, 1+rng.Intn(3000), rng)
					write(t, raw, s)
					torn, what = "", "rewritten"
				case r < 9:
					s, _ := trialRecs("B1", id, 1+rng.Intn(3000), rng)
					tmp := raw + ".tmp"
					write(t, tmp, s)
					must(t, os.Rename(tmp, raw))
					torn, what = "", "replaced"
				default:
					what = "idle"
				}
				wantTok, wantLines := trialTruth(t, raw)
				var snap snapshot.Snapshot
				for i := 0; i < 6; i++ {
					snap = w.Poll(context.Background())
					c.advance(2 * time.Second)
					if !snap.TokensPartial && len(snap.Categories) > 0 && snap.Categories[0].Lines == wantLines {
						break
					}
				}
				if len(snap.Categories) == 0 {
					t.Fatalf("step %d (%s): no category", step, what)
				}
				cat := snap.Categories[0]
				if snap.TokensPartial || cat.Lines != wantLines || snap.CompletionTokens != wantTok {
					t.Fatalf("step %d (%s): lines %d tokens %d partial %v; the file: lines %d tokens %d (agent err %q)",
						step, what, cat.Lines, snap.CompletionTokens, snap.TokensPartial, wantLines, wantTok, w.agentErr)
				}
			}
			if st, rq := w.agent.Stats(); rq == 0 {
				t.Fatalf("the agent answered nothing (%d starts)", st)
			}
			if bin != "" && !testbin.AgentRuns(bin, "") {
				t.Fatal("the deployed binary does not run as the agent")
			}
		})
	}
}

// A writer that flushes 8 KiB blocks (Python's buffered file) tears its
// last line at nearly every poll. The agent counts such growth on the host
// and keeps the token figure as the plain reads do: the unfinished line is
// taken from the bytes read with the count (from the adversarial trial: it
// had no figure at 17 polls of 18).
func TestAgentBufferedWriterKeepsTokens(t *testing.T) {
	testgate.E2E(t) // a long trial: CI's end-to-end run, not the quick suite
	s := sshdtest.Start(t)
	p := newProxied(t, s)
	t.Setenv("SSH_AUTH_SOCK", "")
	rng := rand.New(rand.NewSource(7))
	root := t.TempDir()
	raw := filepath.Join(root, "prepared", "B1", parse.RawFile)
	write(t, filepath.Join(root, "prepared", "B1", parse.PromptsFile), prompts("B1", 100000))
	all, _ := trialRecs("B1", 0, 5000, rng)
	write(t, raw, all[:8192])
	hb, hp := p.dial(t), p.dial(t)
	t.Cleanup(func() { hb.Close(); hp.Close() })
	c := newClock()
	o := Options{Host: "trial", Root: root, ServerURL: closedURL(t), Now: c.now}
	wb, wp := NewWatcher(hb, o, nil), plainWatcher(hp, o)
	partialB, partialP := 0, 0
	for i := 2; i < 20; i++ {
		appendTo(t, raw, all[(i-1)*8192:i*8192])
		sb, sp := wb.Poll(context.Background()), wp.Poll(context.Background())
		c.advance(2 * time.Second)
		if sb.TokensPartial {
			partialB++
		} else if wantTok, _ := trialTruth(t, raw); sb.CompletionTokens != wantTok {
			t.Errorf("poll %d: the agent's watcher says %d tokens, the file's whole lines hold %d", i, sb.CompletionTokens, wantTok)
		}
		if sp.TokensPartial {
			partialP++
		}
	}
	if partialB > partialP || partialB > 1 {
		t.Errorf("the agent's watcher has no token figure at %d polls of 18, the plain one at %d", partialB, partialP)
	}
}

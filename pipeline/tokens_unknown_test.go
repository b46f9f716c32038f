package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// pyTokenRecords are n records as the old script's json.dumps writes them
// (", " and ": "), whose token counts take every form it leaves: usage's
// int, a top-level int, None (a response without usage), the key missing,
// "n/a", a count as a string, None beside a usage that has it.
func pyTokenRecords(cat string, from, n int, rng *rand.Rand) string {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		tok := rng.IntN(3000)
		head := fmt.Sprintf(`{"id": "%s-%06d", "messages": [{"role": "user", "content": "q %d"}], "response": %q`, cat, i, i, strings.Repeat("answer ", rng.IntN(60)))
		switch i % 10 {
		case 0, 1, 2:
			fmt.Fprintf(&b, `%s, "usage": {"prompt_tokens": 12, "completion_tokens": %d, "total_tokens": %d}}`, head, tok, tok+12)
		case 3, 4:
			fmt.Fprintf(&b, `%s, "completion_tokens": %d, "timestamp": 1764900000.25}`, head, tok)
		case 5:
			fmt.Fprintf(&b, `%s, "usage": null, "completion_tokens": null}`, head)
		case 6:
			fmt.Fprintf(&b, `%s, "timestamp": 1764900000.5}`, head)
		case 7:
			fmt.Fprintf(&b, `%s, "completion_tokens": "n/a"}`, head)
		case 8:
			fmt.Fprintf(&b, `%s, "completion_tokens": "%d"}`, head, tok)
		case 9:
			fmt.Fprintf(&b, `%s, "completion_tokens": null, "usage": {"completion_tokens": %d}}`, head, tok)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// jsonTruth is the file's records decoded by encoding/json, as a reader
// of the file would: tokens from the top level, else usage; a count is a
// whole non-negative number or a string of one, anything else unknown.
func jsonTruth(t *testing.T, p string) (tokens, unknown int64) {
	t.Helper()
	data, err := os.ReadFile(p)
	must(t, err)
	count := func(v any) (int64, bool) {
		if s, ok := v.(string); ok {
			v = json.Number(s)
		}
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil && i >= 0
	}
	for _, l := range bytes.Split(data[:bytes.LastIndexByte(data, '\n')+1], []byte{'\n'}) {
		var rec map[string]any
		d := json.NewDecoder(bytes.NewReader(l))
		d.UseNumber()
		if len(bytes.TrimSpace(l)) == 0 || d.Decode(&rec) != nil || rec["id"] == nil {
			continue
		}
		n, ok := count(rec["completion_tokens"])
		if u, isObj := rec["usage"].(map[string]any); !ok && isObj {
			n, ok = count(u["completion_tokens"])
		}
		if !ok {
			unknown++
		}
		tokens += n
	}
	return tokens, unknown
}

// checkTokens says where a Snapshot's token figures differ from the files'.
// With noFigureOK a category may have no figure yet (a one-shot status of a
// file counted on the host): then the total is partial, over the others.
func checkTokens(t *testing.T, root string, s snapshot.Snapshot) string {
	t.Helper()
	var tot, unk int64
	var bad []string
	for _, c := range s.Categories {
		tok, u := jsonTruth(t, filepath.Join(root, "prepared", c.Name, parse.RawFile))
		tot, unk = tot+tok, unk+u
		if c.CompletionTokens == nil || *c.CompletionTokens != tok || c.TokensUnknown != u || c.TokensFrom != snapshot.TokensFromRecords {
			got := "none"
			if c.CompletionTokens != nil {
				got = fmt.Sprint(*c.CompletionTokens)
			}
			bad = append(bad, fmt.Sprintf("%s: %s tokens (from %q), %d unknown; the file: %d, %d unknown", c.Name, got, c.TokensFrom, c.TokensUnknown, tok, u))
		}
	}
	if s.TokensPartial || s.CompletionTokens != tot || s.TokensUnknown != unk {
		bad = append(bad, fmt.Sprintf("total %d, %d unknown (partial %v); the files: %d, %d unknown", s.CompletionTokens, s.TokensUnknown, s.TokensPartial, tot, unk))
	}
	return strings.Join(bad, "; ")
}

// settle polls until w's token figures are the files' (a hole counted on
// the host is summed by the next poll), at most 6 times.
func settle(t *testing.T, root string, c *clock, w *Watcher, step string) snapshot.Snapshot {
	t.Helper()
	var bad string
	for range 6 {
		s := w.Poll(context.Background())
		c.advance(2 * time.Second)
		if bad = checkTokens(t, root, s); bad == "" {
			return s
		}
	}
	t.Fatalf("%s: %s (agent err %q)", step, bad, w.agentErr)
	return snapshot.Snapshot{}
}

// Records whose tokens are unknown are counted apart, never as 0 tokens,
// and every path agrees on them: the bytes the dashboard reads (a small
// file), the host's awk sum (a big one, counted on the host at a cold
// start), the agent's countthen (growth counted on the host, by the Go
// agent and the shell one, over sshd), and the one-shot `status --json`
// and its text, which says "(+N records unknown)".
func TestTokensUnknownEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 7))
	root := t.TempDir()
	for _, c := range []struct {
		name string
		n    int
	}{{"B1_glaive", 40}, {"B2_opencodeinstruct", 3000}} {
		dir := filepath.Join(root, "prepared", c.name)
		write(t, filepath.Join(dir, parse.PromptsFile), prompts(c.name, 100000))
		write(t, filepath.Join(dir, parse.RawFile), pyTokenRecords(c.name, 0, c.n, rng))
	}
	big := filepath.Join(root, "prepared", "B2_opencodeinstruct", parse.RawFile)
	if fi, err := os.Stat(big); err != nil || fi.Size() <= remote.NewCounter("").RemoteAbove {
		t.Fatalf("B2 must be counted on the host: %v %v", fi.Size(), err)
	}
	if _, u := jsonTruth(t, big); u == 0 {
		t.Fatal("no record with unknown tokens")
	}

	// the plain watcher on this machine: B1's bytes read, B2 summed by awk
	c := newClock()
	settle(t, root, c, localWatcher(t, root, c, Options{}), "local")

	// the one-shot status, --json and text
	t.Run("status", func(t *testing.T) {
		bin := testbin.Path(t)
		status := func(args ...string) []byte {
			cmd := exec.Command(bin, append([]string{"status", "--local", root, "--server-url", closedURL(t)}, args...)...)
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_STATE_HOME="+t.TempDir())
			out, _ := cmd.Output() // no server: its exit says so; the figures are what is checked
			return out
		}
		// one poll: B2, counted on the host, is summed there at once (no
		// poll follows to sum it): the whole figure, not a partial one
		out := status("--json")
		var js, once snapshot.Snapshot
		if err := json.Unmarshal(out, &once); err != nil {
			t.Fatalf("status --json: %v\n%s", err, out)
		}
		if bad := checkTokens(t, root, once); bad != "" {
			t.Fatalf("status --json: %s", bad)
		}
		if !bytes.Contains(out, []byte(`"tokens_unknown_records":`)) {
			t.Fatalf("status --json has no tokens_unknown_records:\n%s", out)
		}
		// --follow: its next polls sum B2 on the host, and agree with the rest
		lines := bytes.Split(bytes.TrimSpace(status("--json", "--follow", "--count", "3", "--poll", "300ms")), []byte("\n"))
		if err := json.Unmarshal(lines[len(lines)-1], &js); err != nil {
			t.Fatalf("status --json --follow: %v\n%s", err, lines[len(lines)-1])
		}
		if bad := checkTokens(t, root, js); bad != "" {
			t.Fatalf("status --json --follow, poll %d: %s", len(lines), bad)
		}
		text := string(status())
		want := "completion tokens: " + parse.TokenFigure(fmt.Sprint(once.CompletionTokens), once.TokensUnknown)
		if !strings.Contains(text, want) || !strings.Contains(want, " records unknown)") {
			t.Fatalf("status text lacks %q:\n%s", want, text)
		}
	})

	// the agents over sshd: growth counted on the host runs the sum beside
	// the count (countthen); a small append is read over the link
	sd := sshdtest.Start(t)
	p := newProxied(t, sd)
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, agent := range []string{"fallback", "go"} {
		t.Run("agent "+agent, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "no-synthwatch") // the fallback, whatever this machine has deployed
			if agent == "go" {
				bin = testbin.Path(t)
			}
			h := p.dial(t)
			t.Cleanup(func() { h.Close() })
			c := newClock()
			w := NewWatcher(h, Options{Host: "trial", Root: root, ServerURL: closedURL(t), WorkerBin: bin, Now: c.now}, nil)
			settle(t, root, c, w, "first polls")
			for i, n := range []int{400, 3, 1200} {
				appendTo(t, big, pyTokenRecords("B2_opencodeinstruct", 10000*(i+1), n, rng))
				settle(t, root, c, w, fmt.Sprintf("append %d", n))
			}
			if st, rq := w.agent.Stats(); rq == 0 {
				t.Fatalf("the agent was not asked (%d starts)", st)
			}
			if agent == "go" && !testbin.AgentRuns(bin, "") {
				t.Fatal("the deployed binary does not run as the agent")
			}
		})
	}
}

package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The records' span of a running category, by the fallback's script (its
// bytes, read on the laptop) and by the agent (its figures): the same, for
// a file larger than the fallback's bound; records too long for the first
// read are read further back; a file older than the age asked is not read.
func TestRecordSpansByEitherReader(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().Truncate(time.Second)
	var b strings.Builder
	for i := 2000; i >= 0; i-- { // a record every 4 s, padded: over 64 KB
		fmt.Fprintf(&b, `{"id":"p%d","output":%q,"timestamp":%d}`+"\n", i, strings.Repeat("x", 60), now.Add(-time.Duration(i)*4*time.Second).Unix())
	}
	write := func(cat, data string, mt time.Time) {
		p := filepath.Join(dir, cat, parse.RawFile)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	write("B2 relaunch", b.String()+`{"id":"cut","timestamp":`, now)
	write("B1", b.String(), now.Add(-time.Hour))
	var long strings.Builder // long completions: 64 KB holds one whole record, 256 KB six
	for i := 9; i >= 0; i-- {
		fmt.Fprintf(&long, `{"id":"p%d","output":%q,"timestamp":%d}`+"\n", i, strings.Repeat("y", 40<<10), now.Add(-time.Duration(i)*4*time.Second).Unix())
	}
	write("B3", long.String(), now)
	want := map[string]parse.RecordSpan{"B2 relaunch": {Records: 76, First: now.Add(-300 * time.Second), Last: now}}
	ag := goAgent(t)
	ctx := context.Background()
	for _, cats := range [][]string{nil, {"B2 relaunch", "B1", "B3"}} {
		argv := RecordSpanArgv("@END-x1", dir, parse.RawFile, 10*time.Minute, cats...)
		fb, ga := &Batch{}, &Batch{}
		asks := map[string]*ExecAsk{"fallback": fb.Exec(argv...), "agent": ga.Exec(argv...)}
		res, err := Local{}.Exec(ctx, fb.Argv()...) // the fallback's one exec
		must(t, err)
		_, err = parseBatchOf(res.Stdout, fb, nil)
		must(t, err)
		_, err = ag.Run(ctx, ga) // the Go agent's answer to the same op
		must(t, err)
		out := map[string][]byte{}
		for name, x := range asks {
			r, ok := x.Result()
			if !ok {
				t.Fatalf("%s: no answer to the span's exec", name)
			}
			out[name] = r.Stdout
		}
		if len(out["fallback"]) < parse.RecordTailFallback || len(out["agent"]) > 200 {
			t.Errorf("the fallback sent %d bytes, the agent %d: the agent sends figures, not bytes", len(out["fallback"]), len(out["agent"]))
		}
		for name, o := range out {
			got := ParseRecordSpans(o, "@END-x1", time.Local, now.Add(time.Second))
			if len(got) != 2 {
				t.Errorf("%s, cats %q: %+v, want B2's and B3's", name, cats, got)
			}
			s := got["B2 relaunch"]
			if w := want["B2 relaunch"]; s.Records != w.Records || !s.First.Equal(w.First) || !s.Last.Equal(w.Last) {
				t.Errorf("%s, cats %q: B2 %+v, want %+v", name, cats, s, w)
			}
			// the fallback's 256 KB holds the last six, the agent's 1 MB all ten
			if s := got["B3"]; s.Records < 6 || !s.Last.Equal(now) {
				t.Errorf("%s, cats %q: B3 %+v, want the last records of 40 KB", name, cats, s)
			}
		}
	}
}

package remote

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/agentproto"
)

// progsSum is the protocol's version and the digest of the programs the
// agent carries by name, as testdata/progs.sum holds them.
func progsSum() string { return fmt.Sprintf("%d %s\n", agentproto.Version, progsDigest()) }

// A request names a program the agent carries (progs), so builds of the
// same Version should carry the same texts: a change of one is a new
// Version (a build that differs anyway, a developer's, is caught by the
// hello's digest). The file keeps the pair; a change of the texts under
// the same Version fails here.
func TestProgsAreTheVersions(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "progs.sum")
	got := progsSum()
	was, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: write it with %q", err, got)
	}
	if string(was) == got {
		return
	}
	if strings.HasPrefix(string(was), fmt.Sprint(agentproto.Version)+" ") {
		t.Fatalf("a program the agent carries by name changed (%s) under the same agentproto.Version: builds of one Version must carry the same texts (an agent of another build refuses a first request that names them, and the fallback reads that poll). Bump agentproto.Version (and Proto), then write %q to %s", strings.Join(slices.Sorted(maps.Keys(progs())), ", "), got, path)
	}
	t.Fatalf("agentproto.Version moved: write %q to %s", got, path)
}

// The poll's programs go by name, not by text, and the agent answers them
// as their text: the same answers as the fallback's shell.
func TestProgsGoByName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	raw := filepath.Join(dir, "prepared", "B1", "raw.jsonl")
	must(t, os.MkdirAll(filepath.Dir(raw), 0o755))
	writeFile(t, raw, `{"id":"a","completion_tokens":3,"created":"2026-12-07T10:00:00Z"}`+"\n"+`{"id":"b","completion_tokens":3,"created":"2026-12-07T10:00:09Z"}`+"\n")
	var asks []*ExecAsk
	batch := func() *Batch {
		b := &Batch{}
		asks = []*ExecAsk{
			b.Exec(ZoneArgv...),
			b.Exec(OwnerArgv(raw)...),
			b.Exec(HoldersArgv([]string{GlobEscape(raw)})...),
			b.Exec(RecordSpanArgv("@SWSPAN-test", filepath.Join(dir, "prepared"), "raw.jsonl", time.Hour)...),
			b.Exec(VitalsArgv(dir, 0, true)...),
		}
		return b
	}
	if req := (&Agent{alias: map[string]int{}, keys: map[string]int{}}).plan(batch()); req.Progs != "" || len(req.Strings) < 5 {
		t.Fatalf("before any hello named this build's programs: %d strings, digest %q; want their texts", len(req.Strings), req.Progs)
	}
	req := (&Agent{alias: map[string]int{}, keys: map[string]int{}, progs: true}).plan(batch())
	if req.Progs != progsDigest() {
		t.Fatalf("a request naming programs says the digest %q, want %q", req.Progs, progsDigest())
	}
	for _, s := range req.Strings {
		if progNames()[s] != "" {
			t.Errorf("the request sent %s's text", progNames()[s])
		}
	}
	var named []string
	for _, sh := range req.Shapes {
		for _, a := range sh.Args {
			if a.Prog != "" {
				named = append(named, a.Prog)
			}
		}
	}
	if want := []string{"zone", "owner", "holders", "recspan", "vitals"}; !slices.Equal(named, want) {
		t.Fatalf("programs named %q, want %q", named, want)
	}
	asText, err := agentproto.NewWriter(io.Discard).Frame((&Agent{alias: map[string]int{}, keys: map[string]int{}}).plan(batch()))
	must(t, err)
	ag := goAgent(t)
	ctx := context.Background()
	first := &Batch{}
	first.Cat(raw, 100)
	if _, err := ag.Run(ctx, first); err != nil { // the hello names this build's programs
		t.Fatal(err)
	}
	if ag.Progs() != progsDigest() {
		t.Fatalf("the agent's hello said the digest %q, want %q", ag.Progs(), progsDigest())
	}
	b := batch()
	if _, err := ag.Run(ctx, b); err != nil {
		t.Fatal(err)
	}
	if ag.lastReq > len(asText)-500 {
		t.Errorf("a request of %d bytes, and %d with the programs' text: they went as text", ag.lastReq, len(asText))
	}
	t.Logf("the request: %d bytes; %d with the programs' text", ag.lastReq, len(asText))
	for i, x := range asks {
		argv := x.Argv()
		got, ok := x.Result()
		if !ok {
			t.Fatalf("%.20q: unanswered", argv[2])
		}
		if i == 4 { // the vitals: CPU and memory move between two reads
			if got.ExitCode != 0 || !strings.Contains(string(got.Stdout), "@@sw ") {
				t.Errorf("vitals by name: code %d, %q", got.ExitCode, got.Stdout)
			}
			continue
		}
		code, out, _ := run(ctx, argv)
		if i == 3 { // the records' span: the agent sends its figures, the shell the bytes
			now := time.Now()
			g, w := ParseRecordSpans(got.Stdout, "@SWSPAN-test", time.UTC, now), ParseRecordSpans(out, "@SWSPAN-test", time.UTC, now)
			if fmt.Sprint(g) != fmt.Sprint(w) || len(g) != 1 {
				t.Errorf("records' span by name %v, by its text in sh %v", g, w)
			}
			continue
		}
		if got.ExitCode != code || string(got.Stdout) != string(out) {
			t.Errorf("%.20q by name: %d %q; by its text in sh: %d %q", argv[2], got.ExitCode, got.Stdout, code, out)
		}
	}
}

// A name the agent does not carry is a bad request, not an empty program.
func TestUnknownProgIsRefused(t *testing.T) {
	t.Parallel()
	s := &hostAgent{shapes: map[int]agentproto.Shape{0: {Name: "exec", Args: []agentproto.Arg{{Lit: "0"}, {Lit: "2"}, {Lit: "sh"}, {Lit: "-c"}, {Prog: "nope"}}}}}
	if _, err := s.resolve(agentproto.Call{Key: 0}); err == nil || !strings.Contains(err.Error(), `no program "nope"`) {
		t.Fatalf("err %v", err)
	}
}

// A request that names programs of another build (a first request sent
// on a hint's word to an agent of the same Version but other texts) is
// refused, never answered with this build's copies; an agent told a stale
// digest sends the texts.
func TestProgsOfAnotherBuildRefused(t *testing.T) {
	t.Parallel()
	s := &hostAgent{shapes: map[int]agentproto.Shape{}}
	if _, err := s.request(context.Background(), agentproto.Request{Progs: "0123456789abcdef"}); err == nil || !strings.Contains(err.Error(), "another build") {
		t.Fatalf("err %v", err)
	}
	ag := &Agent{alias: map[string]int{}, keys: map[string]int{}}
	ag.SetProgs("0123456789abcdef")
	b := &Batch{}
	b.Exec(ZoneArgv...)
	if req := ag.plan(b); req.Progs != "" || len(req.Strings) != 1 {
		t.Fatalf("told another build's digest, the request named programs: %+v", req)
	}
}

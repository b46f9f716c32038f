package digest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/parse"
)

// keptNight is the known night and the gate's Python-written one in one
// root, digested at now with stamps kept in keep ("": none).
type keptNight struct {
	root string
	now  time.Time
	loc  *time.Location
}

func newKeptNight(t *testing.T) keptNight {
	t.Helper()
	loc := time.FixedZone("IST", 5*3600+1800)
	now := time.Date(2026, 3, 4, 6, 20, 0, 0, loc)
	root := t.TempDir()
	digesttest.Night(t, root, now, digesttest.Options{})
	return keptNight{root: root, now: now, loc: loc}
}

// digestJSON is the summary of the night as JSON, its read figures (which
// say how it was read, not what) left out.
func (n keptNight) digestJSON(t *testing.T, keep string) (string, digest.ReadStats) {
	t.Helper()
	s, err := digest.Build(digest.Options{Root: n.root, Since: n.now.Add(-12 * time.Hour), Now: n.now, Loc: n.loc, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	read := s.Read
	s.Read = digest.ReadStats{}
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b), read
}

func (n keptNight) raw(cat string) string {
	return filepath.Join(n.root, parse.PreparedDir, cat, parse.RawFile)
}

// A digest that replays the stamps an earlier one kept says what a digest
// that reads every record says: on the night as it was, once records were
// appended (by Python, a line torn at the end too), and once a file was
// cut and written again.
func TestKeptStampsSayWhatTheRecordsSay(t *testing.T) {
	n := newKeptNight(t)
	keep := filepath.Join(t.TempDir(), "keep")
	check := func(step string, wantKept bool) {
		t.Helper()
		want, _ := n.digestJSON(t, "")
		got, read := n.digestJSON(t, keep)
		if got != want {
			t.Fatalf("%s: the digest with kept stamps differs:\n%s", step, firstDiff(got, want))
		}
		if (read.Kept > 0) != wantKept {
			t.Fatalf("%s: %d bytes of records replayed from kept stamps, want some: %v", step, read.Kept, wantKept)
		}
	}
	check("first digest", false)
	check("second digest", true)

	f, err := os.OpenFile(n.raw("B1_glaive"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := n.now.Add(-30 * time.Minute)
	for i := range 20 {
		f.WriteString(`{"id": "late-` + string(rune('a'+i)) + `", "finished_at": "` + at.Add(time.Duration(i)*time.Second).Format("2006-01-02T15:04:05.000000") + `", "completion_tokens": 77, "reasoning_content": "r", "content": "x", "finish_reason": "length"}` + "\n")
	}
	f.WriteString("not json\n\n")
	f.WriteString(`{"id": "torn", "finished_at": "` + at.Format(time.RFC3339))
	f.Close()
	check("records appended", true)
	check("again, the torn line still torn", true)

	data, err := os.ReadFile(n.raw("B2_opencodeinstruct"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	cut := strings.Join(lines[:len(lines)/2], "")
	tmp := n.raw("B2_opencodeinstruct") + ".new"
	if err := os.WriteFile(tmp, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, n.raw("B2_opencodeinstruct")); err != nil { // a new file where the old one was
		t.Fatal(err)
	}
	check("a file replaced by its first half", true)
	if err := os.WriteFile(n.raw("B3_python"), []byte(strings.Repeat(" ", 100)+"\n"), 0o644); err != nil { // cut in place
		t.Fatal(err)
	}
	check("a file cut in place", true)
}

// Stamps kept where others may write, or a kept file changed by anyone,
// are not replayed: the digest reads the records.
func TestKeptStampsOnlyWhenTheUsersAndWhole(t *testing.T) {
	n := newKeptNight(t)
	keep := filepath.Join(t.TempDir(), "keep")
	want, _ := n.digestJSON(t, "")
	n.digestJSON(t, keep)

	files, err := filepath.Glob(filepath.Join(keep, "*.stamps"))
	if err != nil || len(files) != 3 {
		t.Fatalf("kept files: %v %v, want one per category", files, err)
	}
	for _, f := range files { // a byte of each entry area flipped
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-3] ^= 0x55
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, read := n.digestJSON(t, keep)
	if got != want || read.Kept != 0 {
		t.Fatalf("changed kept files: %d bytes replayed, or a different digest:\n%s", read.Kept, firstDiff(got, want))
	}
	if _, read = n.digestJSON(t, keep); read.Kept == 0 {
		t.Fatal("the changed kept files were not written again")
	}

	if err := os.Chmod(files[0], 0o666); err != nil {
		t.Fatal(err)
	}
	if _, read = n.digestJSON(t, keep); read.Kept == 0 || read.Kept == read.Bytes+read.Kept {
		t.Fatalf("one kept file others may write: %d kept of %d, want the other two only", read.Kept, read.Bytes+read.Kept)
	}
	if err := os.Chmod(keep, 0o777); err != nil {
		t.Fatal(err)
	}
	if got, read = n.digestJSON(t, keep); read.Kept != 0 || got != want {
		t.Fatalf("a folder others may write: %d bytes replayed", read.Kept)
	}
}

// firstDiff is the first line where a and b differ, with its neighbours.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			lo := max(i-3, 0)
			return "got:\n" + strings.Join(al[lo:min(i+3, len(al))], "\n") + "\nwant:\n" + strings.Join(bl[lo:min(i+3, len(bl))], "\n")
		}
	}
	return "(lengths differ)"
}

// The gate's night, written by Python's json.dumps (a "timestamp" for a
// time, reasoning, think markers, null and blank answers, cut ones):
// every figure the gate reads survives being kept.
func TestKeptStampsKeepTheGatesFacts(t *testing.T) {
	root := t.TempDir()
	digesttest.GateNight(t, root, 400)
	keep := filepath.Join(t.TempDir(), "keep")
	now := time.Now()
	build := func(keep string) (string, digest.ReadStats) {
		s, err := digest.Build(digest.Options{Root: root, Since: now.Add(-3 * time.Hour), Now: now, Keep: keep})
		if err != nil {
			t.Fatal(err)
		}
		read := s.Read
		s.Read = digest.ReadStats{}
		b, _ := json.MarshalIndent(s, "", " ")
		return string(b), read
	}
	want, _ := build("")
	build(keep)
	got, read := build(keep)
	if read.Kept == 0 || read.Bytes > 64<<10 {
		t.Fatalf("the second digest replayed %d bytes and read %d", read.Kept, read.Bytes)
	}
	if got != want {
		t.Fatalf("the digest with kept stamps differs:\n%s", firstDiff(got, want))
	}
	if !strings.Contains(want, `"gate"`) {
		t.Fatal("the night has no gate to compare")
	}
}

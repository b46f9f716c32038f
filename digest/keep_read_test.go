package digest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testgate"
	"github.com/synthwatch/synthwatch/parse"
)

// stampsOf is every line's stamp of path as eachStamp folds it (kp nil:
// the whole file read), in a form two reads compare in: an error is
// "bad", a time its instant.
func stampsOf(t *testing.T, path string, kp *kept, during func()) []string {
	t.Helper()
	return stampsAt(t, path, time.UTC, kp, during)
}

// stampsIn is stampsOf with the times read in loc.
func stampsIn(t *testing.T, path string, loc *time.Location, kp *kept) []string {
	t.Helper()
	return stampsAt(t, path, loc, kp, nil)
}

func stampsAt(t *testing.T, path string, loc *time.Location, kp *kept, during func()) []string {
	t.Helper()
	var out []string
	_, _, _, err := eachStamp(path, loc, kp, func(ls lineStamp) {
		if during != nil {
			during()
			during = nil
		}
		st := ls.st
		out = append(out, fmt.Sprintf("blank=%v bad=%v whole=%v t=%d/%v %s run=%q ct=%d/%v pt=%d/%v %+v %+v", ls.blank, ls.err != nil,
			ls.complete, st.Finished.UnixNano(), st.HasFinished, st.TimeField, st.Run, st.CompletionTokens, st.HasTokens,
			st.PromptTokens, st.HasPrompt, st.Outcome, st.Gate))
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// pythonRecords are two records files written by Python's json.dumps
// (gate.py): a, and b, another and longer one.
func pythonRecords(t *testing.T) (a, b string) {
	t.Helper()
	small, big := t.TempDir(), t.TempDir()
	digesttest.GateNight(t, small, 300)
	digesttest.GateNight(t, big, 1200)
	a = filepath.Join(small, parse.PreparedDir, "B1_reason", parse.RawFile)
	b = filepath.Join(big, parse.PreparedDir, "B2_reason", parse.RawFile)
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA != nil || errB != nil || fb.Size() <= fa.Size() {
		t.Fatalf("records: %v %v, or the second not the longer", errA, errB)
	}
	return a, b
}

// A records file renamed over the one a digest is reading (a category
// written again, a file restored) is not kept as the stamps of the file
// that was read: the next digest replays nothing of the old file's for
// the new one, and says what a whole read of it says.
func TestKeptStampsOfTheFileRead(t *testing.T) {
	a, b := pythonRecords(t)
	k := newKeeper(filepath.Join(t.TempDir(), "keep"), time.UTC, time.Now())
	stampsOf(t, a, k.open(a), func() {
		if err := os.Rename(b, a); err != nil {
			t.Fatal(err)
		}
	})
	want := stampsOf(t, a, nil, nil)
	got := stampsOf(t, a, k.open(a), nil)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("after a file renamed over the records mid-read, line %d of %d (whole read %d):\n got %s\nwant %s", i+1, len(got), len(want), got[i], want[i])
			}
		}
		t.Fatalf("after a file renamed over the records mid-read: %d stamps, a whole read %d", len(got), len(want))
	}
}

// The stamps added in memory stop at maxKeptBytes, as those replayed do:
// a file of short lines (a byte of stamp each) costs no memory in
// proportion, and no kept file is written that replay would refuse.
func TestKeptStampsBounded(t *testing.T) {
	a, _ := pythonRecords(t)
	defer func(m int64) { maxKeptBytes = m }(maxKeptBytes)
	maxKeptBytes = 1 << 10
	keep := filepath.Join(t.TempDir(), "keep")
	k := newKeeper(keep, time.UTC, time.Now())
	kp := k.open(a)
	want := stampsOf(t, a, kp, nil)
	if int64(len(kp.add)) > maxKeptBytes {
		t.Fatalf("%d bytes of stamps held for a bound of %d", len(kp.add), maxKeptBytes)
	}
	kp = k.open(a)
	if kp.f != nil {
		if !kp.load() {
			t.Fatalf("a kept file of %d bytes of stamps was written, over the bound of %d", kp.hdr.Bytes, maxKeptBytes)
		}
		kp.close()
	}
	if got := stampsOf(t, a, k.open(a), nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatal("the digest after one over the bound says something else")
	}
}

// Stamps kept under one zone are not replayed under another that reads
// the same now (America/Phoenix and, in winter, America/Denver are both
// "MST -0700", and the host's zone is "Local" whichever it is): a
// zone-less time of the summer is another instant in each.
func TestKeptStampsOfTheZone(t *testing.T) {
	py := testgate.Tool(t, "python3", "records with zone-less times")
	raw := filepath.Join(t.TempDir(), parse.RawFile)
	script := `import json, sys, datetime
with open(sys.argv[1], "w") as f:
    for i in range(200):
        at = datetime.datetime(2026, 7, 1, 12) + datetime.timedelta(minutes=i)
        f.write(json.dumps({"id": "r%d" % i, "finished_at": at.isoformat(), "completion_tokens": i, "content": "x", "finish_reason": "stop"}) + "\n")
`
	if out, err := exec.Command(py, "-c", script, raw).CombinedOutput(); err != nil {
		t.Fatalf("python3: %v: %s", err, out)
	}
	zone := func(name string) *time.Location {
		data, err := os.ReadFile(filepath.Join("/usr/share/zoneinfo", name))
		if err != nil && os.Getenv("CI") == "true" {
			t.Fatalf("no zoneinfo: %v", err)
		} else if err != nil {
			t.Skipf("no zoneinfo: %v", err)
		}
		loc, err := time.LoadLocationFromTZData("Local", data)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	phoenix, denver := zone("America/Phoenix"), zone("America/Denver")
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	keep := filepath.Join(t.TempDir(), "keep")
	k := newKeeper(keep, phoenix, now)
	stampsIn(t, raw, phoenix, k.open(raw))
	k = newKeeper(keep, denver, now)
	want := stampsIn(t, raw, denver, nil)
	if got := stampsIn(t, raw, denver, k.open(raw)); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("stamps kept in another zone of the same name and offset now were replayed:\n got %s\nwant %s", got[0], want[0])
	}
}

// What has the kept file's name is checked as it was opened, and opened
// as a regular file: a FIFO there (or a name swapped between the check
// and the read) neither holds the digest nor is replayed.
func TestKeptStampsOpenedAsChecked(t *testing.T) {
	a, _ := pythonRecords(t)
	keep := filepath.Join(t.TempDir(), "keep")
	k := newKeeper(keep, time.UTC, time.Now())
	want := stampsOf(t, a, nil, nil)
	if err := syscall.Mkfifo(k.file(a), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := stampsOf(t, a, k.open(a), nil); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatal("a FIFO for a kept file: the digest differs")
	}
}

// Kept stamps a digest replayed, with nothing new to add, were used: the
// prune of what no digest used for keptFor leaves them (a finished
// root, reported on every few days, is not read whole every fortnight).
func TestKeptStampsUsedStay(t *testing.T) {
	a, _ := pythonRecords(t)
	keep := filepath.Join(t.TempDir(), "keep")
	k := newKeeper(keep, time.UTC, time.Now())
	stampsOf(t, a, k.open(a), nil)
	old := time.Now().Add(-keptFor + time.Hour)
	if err := os.Chtimes(k.file(a), old, old); err != nil {
		t.Fatal(err)
	}
	k = newKeeper(keep, time.UTC, time.Now())
	if kp := k.open(a); kp.f == nil {
		t.Fatal("the kept stamps were not kept")
	} else {
		stampsOf(t, a, kp, nil) // replayed, nothing new
	}
	k = newKeeper(keep, time.UTC, time.Now().Add(2*time.Hour))
	if _, err := os.Stat(k.file(a)); err != nil {
		t.Fatalf("kept stamps used an hour before were pruned: %v", err)
	}
}

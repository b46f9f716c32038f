package timeline

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

func TestTimelinePersists(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "state", "host.jsonl")
	tl := New(3, p)
	for i := 0; i < 5; i++ {
		tl.Add(snapshot.Event{Time: time.Unix(int64(i), 0), Kind: "k", Text: "e"})
	}
	again := New(3, p)
	if r := again.Recent(10); len(r) != 3 || r[2].Time.Unix() != 4 {
		t.Fatalf("reloaded %+v", r)
	}
}

// The history file is one per host and root, with a name that is safe on
// every OS: no ':', no spaces, no '/', readable, and a hash to keep apart
// what the readable part would merge.
func TestStatePathPerHostAndRoot(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/xdg")
	got := StatePath("root@10.1.230.174:22", "/data/x y")
	if filepath.Dir(got) != "/xdg/synthwatch" {
		t.Fatalf("state dir of %s", got)
	}
	base := filepath.Base(got)
	if ok, _ := regexp.MatchString(`^root_10\.1\.230\.174_22_data_x_y-[0-9a-f]{8}\.jsonl$`, base); !ok {
		t.Errorf("state file name %q", base)
	}
	if strings.ContainsAny(base, `:/\ @*?"<>|`) {
		t.Errorf("unsafe characters in %q", base)
	}
	if StatePath("root@10.1.230.174:22", "/data/x y") != got {
		t.Error("not stable")
	}
	for _, other := range [][2]string{{"root@10.1.230.174:22", "/data/x_y"}, {"root@10.1.230.174:22", "/data/eagle3/synth_100k"}, {"root@10.1.230.175:22", "/data/x y"}} {
		if StatePath(other[0], other[1]) == got {
			t.Errorf("%v shares the history of root@10.1.230.174:22 /data/x y", other)
		}
	}
	if b := filepath.Base(StatePath("demo 127.0.0.1:4000", "/tmp/demo root")); strings.ContainsAny(b, ": ") {
		t.Errorf("demo name %q", b)
	}
}

// An event with a key is kept once, in memory and across a reload; the
// timeline stays in time order when an older event arrives late.
func TestTimelineKeysAndOrder(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "h.jsonl")
	tl := New(10, p)
	t1, t2 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	if !tl.Add(snapshot.Event{Time: t2, Kind: "stall_start", Text: "late"}) || !tl.Add(snapshot.Event{Time: t1, Kind: "server_crash", Text: "boom", Key: "k1"}) {
		t.Fatal("not added")
	}
	if tl.Add(snapshot.Event{Time: t1, Kind: "server_crash", Text: "boom", Key: "k1"}) {
		t.Fatal("a keyed event added twice")
	}
	tl.Add(snapshot.Event{Time: t2, Kind: "disconnect", Text: "same"})
	tl.Add(snapshot.Event{Time: t2, Kind: "disconnect", Text: "same"}) // no key: two real drops
	again := New(10, p)
	if again.Add(snapshot.Event{Time: t1, Kind: "server_crash", Text: "boom", Key: "k1"}) {
		t.Fatal("a keyed event added again after a reload")
	}
	r := again.Recent(10)
	if len(r) != 4 || r[0].Key != "k1" || r[1].Text != "late" {
		t.Fatalf("reloaded %+v", r)
	}
}

package remote

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// The agent's Go answers to the poll's small programs are the programs'
// own: each runs here both ways, by sh as the fallback runs it and by
// answerNative, and the answers are one (the vitals' moving figures, the
// load and free memory, only parse alike).
func TestAgentAnswersAsTheShell(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent reads /proc in Go on Linux only")
	}
	ctx := context.Background()
	dir := t.TempDir()
	held := parse.Layout{Root: dir}.Raw("a [b] *c")
	must(t, os.MkdirAll(filepath.Dir(held), 0o755))
	f, err := os.OpenFile(held, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	must(t, err)
	defer f.Close()
	sh := func(argv []string) (int, string) {
		t.Helper()
		code, out, errb := run(ctx, argv)
		if len(errb) > 0 && code == 0 {
			t.Logf("%s: stderr %q", argv[2][:20], errb)
		}
		return code, string(out)
	}
	native := func(argv []string) (int, string) {
		t.Helper()
		code, out, _, ok := answerNative(ctx, argv)
		if !ok {
			t.Fatalf("not answered in Go: %q", argv)
		}
		return code, string(out)
	}
	same := func(what string, argv []string) {
		t.Helper()
		c1, o1 := sh(argv)
		c2, o2 := native(argv)
		if c1 != c2 || o1 != o2 {
			t.Fatalf("%s: sh says %d %q, Go %d %q", what, c1, o1, c2, o2)
		}
	}
	t.Setenv("TZ", "")
	os.Unsetenv("TZ") // date and Go both read /etc/localtime
	same("the zone", ZoneArgv)
	same("pipeline.toml's owner", OwnerArgv(held))
	same("a system file's owner", OwnerArgv("/etc/passwd"))
	if _, _, _, ok := answerNative(ctx, OwnerArgv(filepath.Join(dir, "gone"))); ok {
		t.Fatal("a file that is not there: Go answered; stat's own error is the answer")
	}

	// this process holds the file for writing: the scan finds it, and a
	// pattern of another file finds nothing
	pats := []string{parse.Layout{Root: GlobEscape(dir)}.Raw("*"), GlobEscape(filepath.Join(dir, "no such log"))}
	_, o1 := sh(HoldersArgv(pats))
	_, o2 := native(HoldersArgv(pats))
	if !strings.Contains(o2, " "+held+"\n") {
		t.Fatalf("Go's scan missed this process's file %s:\n%s", held, o2)
	}
	lines := func(s string) []string { l := strings.Split(strings.TrimSpace(s), "\n"); slices.Sort(l); return l }
	if !slices.Equal(lines(o1), lines(o2)) {
		t.Fatalf("the scan: sh says\n%s\nGo says\n%s", o1, o2)
	}
	if _, _, _, ok := answerNative(ctx, HoldersArgv([]string{"/x/[ab]"})); ok {
		t.Fatal("a bracket in a pattern: Go answered; find's fnmatch reads it")
	}

	for _, disk := range []bool{true, false} {
		argv := VitalsArgv(dir, os.Getpid(), disk)
		_, o1 := sh(argv)
		_, o2 := native(argv)
		s1, s2 := parse.SplitVitals(o1), parse.SplitVitals(o2)
		names := func(m map[string]parse.VitalsSection) []string {
			var n []string
			for k, v := range m {
				n = append(n, k+" "+string(rune('0'+v.Code)))
			}
			slices.Sort(n)
			return n
		}
		if !slices.Equal(names(s1), names(s2)) {
			t.Fatalf("vitals (disk %v): sections sh %v, Go %v", disk, names(s1), names(s2))
		}
		for _, k := range []string{"clk", "stat", "status"} {
			if k == "stat" { // its ticks move: its pid, comm and start do not
				a, err1 := ParseProcStat([]byte(s1[k].Out))
				b, err2 := ParseProcStat([]byte(s2[k].Out))
				if err1 != nil || err2 != nil || a.StartTime != b.StartTime || a.PPID != b.PPID {
					t.Fatalf("vitals' stat: sh %q, Go %q", s1[k].Out, s2[k].Out)
				}
				continue
			}
			if k == "status" {
				_, ok1 := parse.ParseVmRSS(s1[k].Out)
				_, ok2 := parse.ParseVmRSS(s2[k].Out)
				if !ok1 || !ok2 {
					t.Fatalf("vitals' status: sh %q, Go %q", s1[k].Out, s2[k].Out)
				}
				continue
			}
			if s1[k] != s2[k] {
				t.Fatalf("vitals' %s: sh %q, Go %q", k, s1[k].Out, s2[k].Out)
			}
		}
		_, t1, e1 := parse.ParseMemInfo(s1["mem"].Out)
		_, t2, e2 := parse.ParseMemInfo(s2["mem"].Out)
		if e1 != nil || e2 != nil || t1 != t2 {
			t.Fatalf("vitals' mem: sh %q, Go %q", s1["mem"].Out, s2["mem"].Out)
		}
		if _, err := parse.ParseLoadAvg(s2["load"].Out); err != nil {
			t.Fatalf("vitals' load: %v", err)
		}
		if disk {
			f1, tot1, e1 := parse.ParseDF(s1["df"].Out)
			f2, tot2, e2 := parse.ParseDF(s2["df"].Out)
			if e1 != nil || e2 != nil || tot1 != tot2 || f1-f2 > 64<<20 || f2-f1 > 64<<20 {
				t.Fatalf("vitals' df: sh %q, Go %q", s1["df"].Out, s2["df"].Out)
			}
		}
	}
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Log("nvidia-smi is here: its sections were compared by name and status only")
	}
}

// The agent's zone answer follows /etc/localtime when it is set again
// while the agent runs, as date does (here a link of the test's own,
// moved from Tokyo to New York and back).
func TestAgentZoneFollowsTheLink(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "localtime")
	old := localtimePath
	localtimePath = link
	zones.link = "/the agent's start" // its time.Local is another zone's
	t.Cleanup(func() { localtimePath = old; zones.link, zones.loc = "", nil })
	for _, z := range []struct{ zone string }{{"Asia/Tokyo"}, {"America/New_York"}, {"Asia/Tokyo"}} {
		os.Remove(link)
		must(t, os.Symlink("/usr/share/zoneinfo/"+z.zone, link))
		loc, err := time.LoadLocation(z.zone)
		must(t, err)
		out, ok := zoneNow()
		want := time.Now().In(loc).Format("-0700") + "\n/usr/share/zoneinfo/" + z.zone + "\n"
		if !ok || string(out) != want {
			t.Fatalf("%s: %v %q, want %q", z.zone, ok, out, want)
		}
	}
}

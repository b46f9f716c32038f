package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/digest/digesttest"
	"github.com/synthwatch/synthwatch/internal/testbin"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// reportNight writes a known night ending now, away from an hour's edge
// (the window is "the last 12 hours" on the host's clock).
func reportNight(t testing.TB, o digesttest.Options) (string, digesttest.Truth) {
	t.Helper()
	if now := time.Now(); now.Minute() == 59 && now.Second() > 30 {
		time.Sleep(time.Duration(61-now.Second()) * time.Second)
	}
	root := t.TempDir()
	o.WorkerPID = os.Getpid() // the running run's worker: alive on this host
	return root, digesttest.Night(t, root, time.Now(), o)
}

type reportJSON struct {
	digest.Summary
	LinkBytes *int64 `json:"link_bytes"`
}

// checkNight compares a report's intervals and incidents with the truth.
func checkNight(t *testing.T, s *digest.Summary, tr digesttest.Truth) {
	t.Helper()
	if len(s.Intervals) != 13 || !s.Intervals[0].Start.Equal(tr.Start) {
		t.Fatalf("intervals: %d from %v, want 13 from %v", len(s.Intervals), s.Intervals[0].Start, tr.Start)
	}
	for h, iv := range s.Intervals {
		for _, c := range digesttest.Categories {
			if got, want := iv.Categories[c], tr.Hours[h][c]; got.Records != want.Records || got.Tokens != want.Tokens {
				t.Errorf("hour %s %s: %+v, want %+v", iv.Start.Format("15:04"), c, got, want)
			}
		}
	}
	crash := false
	for _, in := range s.Incidents {
		crash = crash || in.Kind == digest.KindOutage && in.Time.Equal(tr.Crash) && in.End != nil && in.End.Equal(tr.Ready)
	}
	if !crash {
		t.Errorf("no outage %v → %v among %+v", tr.Crash, tr.Ready, s.Incidents)
	}
	ends := map[string]string{}
	for _, r := range s.Runs {
		ends[r.ID] = r.End
	}
	if ends["r1"] != digest.EndByYou || ends["r2"] != digest.EndRunning {
		t.Errorf("runs[] ends: %v", ends)
	}
}

func TestReportLocal(t *testing.T) {
	root, tr := reportNight(t, digesttest.Options{})
	out, code := execCLI(t, "report", "--local", root, "--json")
	var s reportJSON
	if err := json.Unmarshal([]byte(out), &s); code != 0 || err != nil {
		t.Fatalf("report --local --json: code %d, %v: %s", code, err, out)
	}
	checkNight(t, &s.Summary, tr)
	if s.LinkBytes != nil {
		t.Errorf("--local moved %d bytes over no link", *s.LinkBytes)
	}
	out, code = execCLI(t, "report", "--local", root, "--since", "nonsense")
	if code != exitUsage || !strings.Contains(out, "--since") {
		t.Errorf("bad --since: code %d: %s", code, out)
	}
}

// TestReportOverSSH digests a known night on the host (a real sshd on
// loopback) with the host's binary: the per-hour counts are the truth, the
// crash is at its log time, and the link carried a few kilobytes.
func TestReportOverSSH(t *testing.T) {
	bin := testbin.Path(t)
	s := sshdtest.Start(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root, tr := reportNight(t, digesttest.Options{})
	base := []string{"report", "-i", s.KeyPath, "-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes", "--root", root}
	target := s.User + "@" + s.Addr()

	out, code := execCLI(t, append(base, "--worker-bin", bin, "--json", target)...)
	var r reportJSON
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("report --json: code %d, %v: %s", code, err, out)
	}
	checkNight(t, &r.Summary, tr)
	if r.LinkBytes == nil || *r.LinkBytes <= 0 || *r.LinkBytes > 64<<10 {
		t.Fatalf("link bytes %v: want a count under 64 KB", r.LinkBytes)
	}
	t.Logf("the report of a %d-byte root moved %d bytes over the link", tr.Bytes, *r.LinkBytes)

	out, code = execCLI(t, append(base, "--worker-bin", bin, target)...)
	// the crash's clock, its date before it when the night spans midnight
	crashLine := regexp.MustCompile(`(?m)^ +(\d\d-\d\d )?` + tr.Crash.Format("15:04") + ` +→ \S+ +20m +outage `)
	if code != 0 || !crashLine.MatchString(out) || !strings.Contains(out, "crossed the link") {
		t.Errorf("report: code %d: %s", code, out)
	}
	page := filepath.Join(t.TempDir(), "night.html")
	out, code = execCLI(t, append(base, "--worker-bin", bin, "--html", page, target)...)
	if data, err := os.ReadFile(page); code != 0 || err != nil || !strings.Contains(string(data), `<svg id="throughput"`) {
		t.Errorf("report --html: code %d, %v: %s", code, err, out)
	}

	out, code = execCLI(t, append(base, "--worker-bin", filepath.Join(root, "no-such-binary"), target)...)
	// the advice is a command to paste: the flags that reached the host go with it
	deploy := "synthwatch deploy -i " + remote.Quote(s.KeyPath) + " -o " + remote.Quote("UserKnownHostsFile="+s.KnownHosts) +
		" -o StrictHostKeyChecking=yes --worker-bin " + remote.Quote(filepath.Join(root, "no-such-binary")) + " " + target
	if code != exitFailed || !strings.Contains(out, "no synthwatch binary on the host") || !strings.Contains(out, deploy) {
		t.Errorf("no deployed binary: code %d: %s", code, out)
	}
}

// BenchmarkReportBytes digests a big root (SW_BENCH_ROOT_MB, default
// 2048) over a real sshd and reports the bytes on the wire per report and
// the host's digest speed.
func BenchmarkReportBytes(b *testing.B) {
	mb := 2048
	if v, err := strconv.Atoi(os.Getenv("SW_BENCH_ROOT_MB")); err == nil && v > 0 {
		mb = v
	}
	bin := testbin.Path(b)
	s := sshdtest.Start(b)
	// the small night has ~730 records; 16 KB of content each, scaled up to the size asked for
	const pad = 16 << 10
	root, tr := reportNight(b, digesttest.Options{Pad: pad, Scale: max(1, mb<<20/(730*pad))})
	h, err := remote.Dial(context.Background(), remote.Options{Target: s.User + "@" + s.Addr(), Identities: []string{s.KeyPath},
		Opts: []string{"UserKnownHostsFile=" + s.KnownHosts, "StrictHostKeyChecking=yes"}, SSHBinary: "none", Home: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	f := &hostFlags{root: root, workerBin: bin}
	o := &digestFlags{since: "12h", every: time.Hour, stall: 10 * time.Minute}
	var wire int64
	var secs float64
	for b.Loop() {
		sum, w, err := fetchDigest(context.Background(), h, "bench", f, o)
		if err != nil {
			b.Fatal(err)
		}
		wire, secs = *w, sum.Read.Seconds
	}
	b.ReportMetric(float64(wire), "B_wire/report")
	b.ReportMetric(float64(tr.Bytes)/(1<<20)/secs, "digest_MB/s")
	b.ReportMetric(float64(tr.Bytes)/(1<<20), "root_MB")
	fmt.Fprintf(os.Stderr, "root %.0f MB: %d bytes on the wire, digest %.1fs on the host\n", float64(tr.Bytes)/(1<<20), wire, secs)
}

// A host where nothing was deployed: the first status installs the host
// agent, and report's digest runs it (it is synthwatch too), so a report
// needs no deploy; with --worker-bin naming a missing binary it still says
// so, and gives the deploy advice.
func TestReportThroughTheInstalledAgent(t *testing.T) {
	s := sshdtest.Start(t)
	if s.Home() == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs the server's own home (root and unshare)")
		}
		t.Skip("needs the server's own home (root and unshare)")
	}
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	root, tr := reportNight(t, digesttest.Options{})
	ssh := []string{"-i", s.KeyPath, "-o", "UserKnownHostsFile=" + s.KnownHosts, "-o", "StrictHostKeyChecking=yes", "--root", root}
	target := s.User + "@" + s.Addr()
	if out, code := execCLI(t, append(append([]string{"report"}, ssh...), "--json", target)...); code != exitFailed || !strings.Contains(out, "no synthwatch binary on the host") {
		t.Fatalf("report before any contact: code %d: %s", code, out)
	}
	if out, code := execCLI(t, append(append([]string{"status"}, ssh...), "--server-url", "http://127.0.0.1:1", target)...); code != 0 {
		t.Fatalf("status: code %d: %s", code, out)
	}
	out, code := execCLI(t, append(append([]string{"report"}, ssh...), "--json", target)...)
	var r reportJSON
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil {
		t.Fatalf("report after the agent was installed: code %d, %v: %s", code, err, out)
	}
	checkNight(t, &r.Summary, tr)
	if out, code := execCLI(t, append(append([]string{"report"}, ssh...), "--worker-bin", filepath.Join(root, "nope"), target)...); code != exitFailed || !strings.Contains(out, "no synthwatch binary on the host") {
		t.Fatalf("a --worker-bin that is not there: code %d: %s", code, out)
	}
}

// remote/host/digest.sh spells noBinary, which report reads back.
func TestDigestScriptSaysNoBinary(t *testing.T) {
	if !strings.Contains(digestScript, `{ echo "`+noBinary+` ($bin)" >&2; exit 127; }`) {
		t.Errorf("digest.sh does not say %q:\n%s", noBinary, digestScript)
	}
}

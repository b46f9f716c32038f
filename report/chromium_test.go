package report_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/report"
)

// chromium finds Debian's headless browser; under CI=true its absence
// fails the test (CI installs it), elsewhere it skips saying how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found; install it with: apt-get install -y chromium")
	}
	t.Skip("chromium not found (apt-get install -y chromium); skipped outside CI")
	return ""
}

// headless runs chromium on file with args and returns its stdout.
func headless(t *testing.T, bin, file string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--window-size=1000,1400"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+file)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
	}
	return out.Bytes()
}

// TestReportHTMLInChromium renders the page in a real browser: the DOM
// it builds has both charts with their bars, line and incident marks, and
// the screenshot is not blank. SW_REPORT_PNG=path keeps the screenshot
// (docs/report.png is made so).
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := report.HTML(&b, night(t), "gpu1:/data/eagle3/synth_100k"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := string(headless(t, bin, file, "--dump-dom"))
	for _, id := range []string{"records", "throughput"} {
		if !strings.Contains(dom, `<svg id="`+id+`"`) {
			t.Errorf("the DOM has no %s chart", id)
		}
	}
	if n := strings.Count(dom, `class="bar"`); n < 13 {
		t.Errorf("%d bars in the records chart, want one or more per interval with records (13)", n)
	}
	path := regexp.MustCompile(`<path class="throughput" d="([^"]+)"`).FindStringSubmatch(dom)
	if path == nil || strings.Count(path[1], "L") < 5 {
		t.Errorf("the throughput line is missing or trivial: %v", path)
	}
	if n := strings.Count(dom, `class="incident"`); n < 2*2 {
		t.Errorf("%d incident marks, want the run start and end on both charts", n)
	}
	// the stall and the outage have a length: a band each, on both charts
	bands := regexp.MustCompile(`<rect class="band" x="([0-9.]+)" y="[0-9.]+" width="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	if len(bands) != 2*2 {
		t.Errorf("%d incident bands, want the stall and the outage on both charts", len(bands))
	}
	for _, m := range bands {
		if w, _ := strconv.ParseFloat(m[2], 64); w < 10 { // 20 and 37 minutes of a 13-hour axis 832 units wide: 21 and 39
			t.Errorf("a band %s units wide: %v", m[2], m)
		}
	}

	shot := filepath.Join(dir, "shot.png")
	headless(t, bin, file, "--screenshot="+shot, "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if colours := distinct(img); colours < 8 {
		t.Errorf("the screenshot has %d colours: blank", colours)
	}
	if keep := os.Getenv("SW_REPORT_PNG"); keep != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(keep, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// distinct counts the colours of img, sampled on a grid.
func distinct(img image.Image) int {
	seen := map[[3]uint32]bool{}
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y += 3 {
		for x := r.Min.X; x < r.Max.X; x += 3 {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			seen[[3]uint32{cr >> 8, cg >> 8, cb >> 8}] = true
		}
	}
	return len(seen)
}

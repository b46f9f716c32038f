package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/servers"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/pipeline/vitals"
	"github.com/synthwatch/synthwatch/remote"
	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// fakeSMI puts a stand-in nvidia-smi on PATH (and returns its folder): it
// prints gpus.csv or apps.csv from that folder, as the real tool prints
// --format=csv,noheader,nounits, and refuses a query it was not written
// for, as the real one refuses an unknown field.
func fakeSMI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
d=$(dirname "$0")
case "$*" in
*"--query-gpu=` + parse.GPUQuery + ` --format=csv,noheader,nounits"*) f=gpus.csv ;;
*"--query-compute-apps=` + parse.GPUAppsQuery + ` --format=csv,noheader,nounits"*) f=apps.csv ;;
*) echo "Field \"$*\" is not a valid field to query." >&2; exit 2 ;;
esac
[ -f "$d/fail" ] && { cat "$d/fail"; exit 9; }
[ -f "$d/hang" ] && exit 124 # as timeout(1) ends a hung one
cat "$d/$f"
`
	must(t, os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755))
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return dir
}

// h100s is nvidia-smi's CSV for n H100s (all but the skipped), util% each.
func h100s(util float64, skip ...int) (gpus, apps string) {
	var g, a strings.Builder
	for i := 0; i < 8; i++ {
		if contains(skip, i) {
			continue
		}
		uuid := fmt.Sprintf("GPU-5b3a1c2e-8f0d-4e7a-9c11-0f2b7d6e4a1%d", i)
		fmt.Fprintf(&g, "%d, NVIDIA H100 80GB HBM3, %g, %d, 81559, %d, %.2f, %s\n", i, util, 63412+i, 70+i, 600.5+float64(i), uuid)
		fmt.Fprintf(&a, "%s, %d, 62310\n", uuid, 48211+i)
	}
	return g.String(), a.String()
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func setSMI(t *testing.T, dir, gpus, apps string) {
	t.Helper()
	must(t, os.WriteFile(filepath.Join(dir, "gpus.csv"), []byte(gpus), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "apps.csv"), []byte(apps), 0o644))
}

func eventsOf(s snapshot.Snapshot, kind string) []snapshot.Event {
	var out []snapshot.Event
	for _, e := range s.Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func TestVitalsEightGPUsOneDropsOut(t *testing.T) {
	smi := fakeSMI(t)
	c := newClock()
	c.t = time.Now()
	root, pid := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	paceVitals(w, -1, 0) // every poll
	g, a := h100s(97)
	setSMI(t, smi, g, a)

	s := poll(w)
	v := s.Vitals
	if len(v.GPUs) != 8 || v.GPUError != "" || len(v.GPUsLost) != 0 {
		t.Fatalf("8 GPUs: %+v", v)
	}
	g3 := v.GPUs[3]
	if g3.Index != 3 || g3.Name != "NVIDIA H100 80GB HBM3" || *g3.UtilPct != 97 || *g3.MemUsedMiB != 63415 || *g3.MemTotalMiB != 81559 ||
		*g3.TempC != 73 || *g3.PowerW != 603.5 || len(g3.PIDs) != 1 || g3.PIDs[0] != 48214 {
		t.Fatalf("GPU 3: %+v", g3)
	}
	if v.Load1 == nil || v.MemAvailBytes == nil || v.MemTotalBytes == nil || *v.MemTotalBytes <= 0 || v.Disk == nil || v.Disk.TotalBytes <= 0 {
		t.Fatalf("host: %+v disk %+v", v, v.Disk)
	}
	// the worker's pid is known from the first poll: its RSS and CPU from the second
	// (CPU% needs the host's uptime to move on between two reads: 10 ms ticks)
	for i := 0; i < 200; i++ {
		c.advance(2 * time.Second)
		time.Sleep(20 * time.Millisecond)
		if s = poll(w); s.Vitals.WorkerCPUPct != nil {
			break
		}
	}
	if s.Worker.PID != pid || s.Vitals.WorkerRSSBytes == nil || *s.Vitals.WorkerRSSBytes <= 0 || s.Vitals.WorkerCPUPct == nil || *s.Vitals.WorkerCPUPct < 0 {
		t.Fatalf("worker %+v vitals rss %v cpu %v", s.Worker, s.Vitals.WorkerRSSBytes, s.Vitals.WorkerCPUPct)
	}
	if len(eventsOf(s, "gpu_lost")) != 0 {
		t.Fatalf("gpu_lost with every GPU there: %+v", s.Events)
	}

	// GPU 5 falls off the bus
	g, a = h100s(97, 5)
	setSMI(t, smi, g, a)
	c.advance(2 * time.Second)
	s = poll(w)
	if len(s.Vitals.GPUs) != 7 || len(s.Vitals.GPUsLost) != 1 || s.Vitals.GPUsLost[0] != 5 {
		t.Fatalf("7 GPUs: %+v", s.Vitals)
	}
	lost := eventsOf(s, "gpu_lost")
	if len(lost) != 1 || !strings.Contains(lost[0].Text, "GPU 5 (NVIDIA H100 80GB HBM3) dropped out: 7 of 8") {
		t.Fatalf("gpu_lost: %+v", lost)
	}
	c.advance(2 * time.Second)
	s = poll(w)
	if len(eventsOf(s, "gpu_lost")) != 1 || len(s.Vitals.GPUsLost) != 1 {
		t.Fatalf("gpu_lost again: %+v", eventsOf(s, "gpu_lost"))
	}
	// a hung nvidia-smi (timeout's 124) says so and loses no more GPUs
	must(t, os.WriteFile(filepath.Join(smi, "hang"), nil, 0o644))
	c.advance(2 * time.Second)
	s = poll(w)
	if len(s.Vitals.GPUs) != 0 || len(s.Vitals.GPUsLost) != 1 || !strings.Contains(s.Vitals.GPUError, "did not answer") || len(eventsOf(s, "gpu_lost")) != 1 {
		t.Fatalf("hung: %+v", s.Vitals)
	}
	must(t, os.Remove(filepath.Join(smi, "hang")))
	// the driver gives up: the rest are lost too, and said why
	must(t, os.WriteFile(filepath.Join(smi, "fail"), []byte("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"), 0o644))
	c.advance(2 * time.Second)
	s = poll(w)
	if len(s.Vitals.GPUs) != 0 || len(s.Vitals.GPUsLost) != 8 || !strings.Contains(s.Vitals.GPUError, "couldn't communicate") {
		t.Fatalf("driver gone: %+v", s.Vitals)
	}
	if n := len(eventsOf(s, "gpu_lost")); n != 8 {
		t.Fatalf("%d gpu_lost events, want 8", n)
	}
	// status --json's names
	data, err := json.Marshal(s)
	must(t, err)
	for _, k := range []string{`"vitals":{"gpus":[]`, `"gpus_lost":[0,1,2,3,4,5,6,7]`, `"load1":`, `"disk":{"free_bytes":`, `"full_in_s":null`, `"worker_rss_bytes":`, `"worker_cpu_pct":`} {
		if !strings.Contains(string(data), k) {
			t.Errorf("json lacks %s: %s", k, data)
		}
	}
}

func TestVitalsNoNvidiaSMI(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin") // no nvidia-smi there
	c := newClock()
	root, _ := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	s := poll(w)
	if s.Vitals.GPUs != nil || s.Vitals.GPUError != "" || s.Vitals.Load1 == nil {
		t.Fatalf("no nvidia-smi: %+v", s.Vitals)
	}
	data, err := json.Marshal(s.Vitals)
	must(t, err)
	if !strings.Contains(string(data), `"gpus":null`) {
		t.Fatalf("%s", data)
	}
}

func TestVitalsGPUsIdleWhileWorkerRuns(t *testing.T) {
	smi := fakeSMI(t)
	c := newClock()
	c.t = time.Now()
	root, _ := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	g, a := h100s(0)
	setSMI(t, smi, g, a)
	raw := filepath.Join(root, "prepared", "B2", "raw_responses.jsonl")
	var s snapshot.Snapshot
	for i := 0; i < 4; i++ { // records keep coming: the worker runs, the GPUs read 0 %
		s = poll(w)
		if s.Vitals.GPUsIdle || len(eventsOf(s, "gpu_idle")) != 0 {
			t.Fatalf("idle after %d min: %+v", i, s.Vitals)
		}
		c.advance(50 * time.Second)
		appendTo(t, raw, records("B2", 100+10*i, 10))
	}
	s = poll(w) // 200 s of 0 %
	if !snapshot.Alive(s.Worker.State) || !s.Vitals.GPUsIdle {
		t.Fatalf("worker %+v idle %v", s.Worker, s.Vitals.GPUsIdle)
	}
	ev := eventsOf(s, "gpu_idle")
	if len(ev) != 1 || !strings.Contains(ev[0].Text, "every GPU idle for 3m20s") {
		t.Fatalf("gpu_idle: %+v", ev)
	}
	// one busy GPU clears it; idle again counts afresh
	g, a = h100s(0)
	g = strings.Replace(g, "0, NVIDIA H100 80GB HBM3, 0,", "0, NVIDIA H100 80GB HBM3, 12,", 1)
	setSMI(t, smi, g, a)
	c.advance(10 * time.Second)
	s = poll(w)
	if s.Vitals.GPUsIdle {
		t.Fatal("still idle with GPU 0 at 12 %")
	}
}

// The vitals are read at most every 10 s; the polls between carry the last
// read's figures, and the disk is read at every 6th read.
func TestVitalsCadence(t *testing.T) {
	smi := fakeSMI(t)
	setFree := fakeDF(t, smi)
	setFree(1 << 40)
	c := newClock()
	root, _ := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	g, a := h100s(97)
	setSMI(t, smi, g, a)
	reads, disks := 0, 0
	for i := 0; i < 60; i++ { // 2 min of 2 s polls
		vr, disk := w.vit.Due(c.now())
		if vr {
			reads++
		}
		if disk {
			disks++
		}
		c.advance(2 * time.Second)
	}
	if reads != 12 || disks != 2 {
		t.Fatalf("%d reads and %d of the disk in 2 min, want 12 and 2", reads, disks)
	}
	w = localWatcher(t, root, c, Options{})
	s := poll(w)
	if len(s.Vitals.GPUs) != 8 || s.Vitals.Disk == nil {
		t.Fatalf("first poll: %+v", s.Vitals)
	}
	g, a = h100s(97, 1)
	setSMI(t, smi, g, a)
	c.advance(2 * time.Second)
	if s = poll(w); len(s.Vitals.GPUs) != 8 || s.Vitals.Disk == nil {
		t.Fatalf("between reads: %+v", s.Vitals)
	}
	c.advance(8 * time.Second)
	if s = poll(w); len(s.Vitals.GPUs) != 7 || s.Vitals.Disk == nil {
		t.Fatalf("the next read: %+v", s.Vitals)
	}
}

// fakeDF puts a stand-in df on PATH that prints the df -P -B1 line held in
// its folder's free file (bytes free of 8 TB).
func fakeDF(t *testing.T, dir string) func(free int64) {
	t.Helper()
	script := `#!/bin/sh
d=$(dirname "$0")
echo "Filesystem        1-blocks          Used     Available Capacity Mounted on"
echo "/dev/nvme0n1p2 8000000000000 $(( 8000000000000 - $(cat "$d/free") )) $(cat "$d/free")      83% /data"
`
	must(t, os.WriteFile(filepath.Join(dir, "df"), []byte(script), 0o755))
	return func(free int64) {
		must(t, os.WriteFile(filepath.Join(dir, "free"), []byte(fmt.Sprint(free)), 0o644))
	}
}

func TestVitalsDiskFullPrediction(t *testing.T) {
	dir := fakeSMI(t) // the same folder on PATH holds df
	setFree := fakeDF(t, dir)
	c := newClock()
	root, _ := runningRoot(t, c)
	w := localWatcher(t, root, c, Options{})
	paceVitals(w, 0, 1)

	// 1 TB free, falling 100 MB/s: full in 10000 s (2h46m), not low yet
	free := int64(1_000_000_000_000)
	var s snapshot.Snapshot
	for i := 0; i < 4; i++ {
		setFree(free)
		s = poll(w)
		c.advance(30 * time.Second)
		free -= 3_000_000_000
	}
	d := s.Vitals.Disk
	if d == nil || d.TotalBytes != 8_000_000_000_000 || d.FullInS == nil {
		t.Fatalf("disk %+v", d)
	}
	if got := *d.FullInS; got < 9800 || got > 10000 || d.Low {
		t.Fatalf("full in %.0f s (want about 9910), low %v", got, d.Low)
	}
	if len(eventsOf(s, "disk_low")) != 0 {
		t.Fatal("disk_low too soon")
	}
	// it speeds up to 200 MB/s: full within 2 h
	for i := 0; i < 30; i++ {
		setFree(free)
		s = poll(w)
		c.advance(30 * time.Second)
		free -= 6_000_000_000
	}
	d = s.Vitals.Disk
	if d.FullInS == nil || *d.FullInS > (2*time.Hour).Seconds() || !d.Low {
		t.Fatalf("fast: %+v full in %v", d, d.FullInS)
	}
	ev := eventsOf(s, "disk_low")
	if len(ev) != 1 || !strings.Contains(ev[0].Text, "full in") {
		t.Fatalf("disk_low: %+v", ev)
	}
	// files deleted: free grows, no prediction, no longer low
	for i := 0; i < 31; i++ {
		free += 10_000_000_000
		setFree(free)
		s = poll(w)
		c.advance(30 * time.Second)
	}
	if d = s.Vitals.Disk; d.FullInS != nil || d.Low {
		t.Fatalf("growing: %+v full in %v", d, d.FullInS)
	}
	// under the floor (5 % of 8 TB is 400 GB): low again, and it stays low
	// until a fifth above the floor (480 GB), however it hovers
	c.advance(16 * time.Minute) // a quarter of an hour on: the fall before is out of the rate's window
	for _, f := range []int64{399e9, 401e9, 399e9, 450e9, 399e9} {
		setFree(f)
		s = poll(w)
		c.advance(30 * time.Second)
		if !s.Vitals.Disk.Low {
			t.Fatalf("%d free: not low", f)
		}
	}
	ev = eventsOf(s, "disk_low")
	if d = s.Vitals.Disk; !d.Low || len(ev) != 2 || !strings.Contains(ev[1].Text, "372 GiB free of 7.3 TiB (5.0%)") {
		t.Fatalf("under the floor: %+v events %+v", d, eventsOf(s, "disk_low"))
	}
}

func TestVitalsStaleWhenLinkDown(t *testing.T) {
	t.Parallel()
	w := &Watcher{}
	w.lastSnap = snapshot.Snapshot{Vitals: snapshot.Vitals{Load1: new(float64)}}
	w.sv = servers.New(servers.Config{History: 4}, []servers.Spec{{URL: parse.DefaultServerURL}})
	w.timeline = timeline.New(10, "")
	s := w.stale(snapshot.Snapshot{Connection: snapshot.Connection{State: snapshot.LinkReconnecting}})
	data, err := json.Marshal(s.Vitals)
	must(t, err)
	if string(data) != `{"gpus":null,"disk":null,"load1":null,"mem_avail_bytes":null,"mem_total_bytes":null,"worker_rss_bytes":null,"worker_cpu_pct":null}` {
		t.Fatalf("stale vitals: %s", data)
	}
}

// The same over a real sshd: the stand-in nvidia-smi is on the session's
// PATH (sshd_config SetEnv), the vitals come in the poll's batch, and a
// GPU that drops out is gpu_lost.
func TestVitalsOverSSHD(t *testing.T) {
	smi := fakeSMI(t)
	g, a := h100s(97)
	setSMI(t, smi, g, a)
	srv := sshdtest.Start(t, sshdtest.WithConfig("SetEnv PATH="+smi+":/usr/local/bin:/usr/bin:/bin"))
	t.Setenv("SSH_AUTH_SOCK", "")
	h, err := remote.Dial(context.Background(), remote.Options{
		Target: srv.User + "@" + srv.Addr(), Identities: []string{srv.KeyPath}, Home: t.TempDir(),
		Opts: []string{"UserKnownHostsFile=" + srv.KnownHosts, "StrictHostKeyChecking=yes"},
	})
	must(t, err)
	t.Cleanup(func() { h.Close() })
	c := newClock()
	root, _ := runningRoot(t, c)
	w := NewWatcher(h, Options{Host: "sshd", Root: root, ServerURL: closedURL(t), Now: c.now}, nil)
	paceVitals(w, -1, 0)
	s := w.Poll(context.Background())
	if len(s.Vitals.GPUs) != 8 || s.Vitals.Disk == nil || s.Vitals.Load1 == nil || s.Vitals.GPUs[7].PIDs[0] != 48218 {
		t.Fatalf("over sshd: %+v", s.Vitals)
	}
	g, a = h100s(97, 2)
	setSMI(t, smi, g, a)
	c.advance(2 * time.Second)
	s = w.Poll(context.Background())
	if len(s.Vitals.GPUs) != 7 || len(eventsOf(s, "gpu_lost")) != 1 {
		t.Fatalf("one lost over sshd: %+v events %+v", s.Vitals, s.Events)
	}
}

// paceVitals makes w's vitals part anew, at its pace: gap between two
// reads (0: the default; -1: every poll), every reads between two of the
// disk (0: the default).
func paceVitals(w *Watcher, gap time.Duration, every int) {
	w.vit = vitals.New(vitals.Config{Root: w.o.Root, Floor: w.o.DiskFloor, Timeline: w.timeline, Gap: gap, Every: every})
}

// Package vitals is the host's health, its part of a poll: one shell line
// in the poll's batch (vitals.sh) read into the GPUs, load, memory, the
// worker's RSS and CPU and the root's filesystem, with gpu_lost, gpu_idle
// and disk_low in the timeline. The Watcher composes it: Due says whether
// a poll reads it, Argv is the batch's exec, Read its answer, Fold folds
// it with the worker judged, View is what the poll shows.
package vitals

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
	"github.com/synthwatch/synthwatch/remote"
)

// The host's vitals are read by one shell line, run in the poll's batch
// beside the other reads: GPUs (when nvidia-smi is there), load, memory,
// the worker process's RSS and CPU time, and at every diskEvery-th read the
// root's filesystem. They are read at most every ReadGap (about 2.5 kB a
// read, script and answer: under 1 MB an hour); the polls between carry the
// last read's figures.

// Vitals rules.
const (
	ReadGap      = 10 * time.Second // the least time between two vitals reads
	diskEvery    = 6                // vitals reads between two reads of the root's filesystem (a minute)
	diskWindow   = 15 * time.Minute // the write rate is measured over this
	diskMinSpan  = time.Minute      // and needs at least this much of it
	diskSoon     = 2 * time.Hour    // full sooner than this is disk_low
	gpuIdleAfter = 3 * time.Minute  // every GPU idle this long while the worker runs is gpu_idle
	// DefaultDiskFloor is the free fraction under which the disk is low.
	DefaultDiskFloor = 0.05
)

// vitalsScript prints every vitals section ($1 the root, $2 the worker's
// pid or 0, $3 1 to read the disk; remote/host/vitals.sh). Each command's
// output is caught whole and printed after its "@@sw NAME RC" line.
var vitalsScript = remote.HostScript("vitals.sh")

// Reading is what one run of vitalsScript gave.
type Reading struct {
	asked bool
	disk  bool // the disk was asked
	pid   int
	secs  map[string]parse.VitalsSection
	err   error
}

// Health is the host's health: its part of a poll's answer (vitalsScript's
// sections) folded into the GPUs seen, the disk's points and the worker's
// CPU sample, with gpu_lost, gpu_idle and disk_low in the timeline.
type Health struct {
	root      string             // the pipeline root: its filesystem is the disk read
	floor     float64            // the free fraction under which the disk is low
	tl        *timeline.Timeline // where its events go
	reads     int                // vitals reads so far
	every     int                // reads between two disk reads (diskEvery; Config.Every)
	gap       time.Duration      // the least time between two reads (ReadGap; Config.Gap)
	lastRead  time.Time
	gpusSeen  map[int]string // index -> name, every GPU seen in this session
	lost      map[int]bool   // lost and recorded
	idleSince time.Time      // every GPU idle (and the worker alive) since
	idleSent  bool
	disk      *snapshot.Disk
	diskPts   []diskPoint
	diskLow   bool
	cpu       cpuSample
	last      snapshot.Vitals
	haveLast  bool
	fails     int             // vitals reads failed in a row
	shown     snapshot.Vitals // what this poll shows (fold)
}

type diskPoint struct {
	at   time.Time
	free int64
}

type cpuSample struct {
	pid    int
	start  int64
	ticks  int64
	uptime float64
}

// Config is what a Health is made of: the root whose filesystem it reads,
// the disk's floor, the timeline its events go to, and its pace.
type Config struct {
	Root     string
	Floor    float64            // the free fraction under which the disk is low (DefaultDiskFloor)
	Timeline *timeline.Timeline // where its events go
	Gap      time.Duration      // the least time between two reads (0: ReadGap; -1: every poll)
	Every    int                // reads between two disk reads (0: diskEvery)
}

// New is the host's health, nothing read yet.
func New(c Config) *Health {
	return &Health{root: c.Root, floor: c.Floor, tl: c.Timeline, gap: c.Gap, every: c.Every}
}

// ReadAgain makes the next poll read the vitals, whatever the gap (the
// link is back).
func (vs *Health) ReadAgain() { vs.lastRead = time.Time{} }

// Read is vitalsScript's answer: the poll's batch's (ask), or, when it
// did not answer, an exec of its own within 5 s.
func (vs *Health) Read(ctx context.Context, rd remote.Host, pid int, disk bool, ask *remote.ExecAsk) Reading {
	vr := Reading{asked: true, pid: pid, disk: disk}
	res, ok := ask.Result()
	if !ok {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if res, err = rd.Exec(ctx, vs.Argv(pid, disk)...); err != nil {
			vr.err = err
			return vr
		}
	}
	vr.secs = parse.SplitVitals(string(res.Stdout))
	return vr
}

// Argv is the one exec of a vitals read.
func (vs *Health) Argv(pid int, disk bool) []string {
	return remote.VitalsArgv(vs.root, pid, disk)
}

// Due says whether this poll reads the vitals, and the disk with them.
func (vs *Health) Due(now time.Time) (read, disk bool) {
	if vs.every <= 0 {
		vs.every = diskEvery
	}
	gap := vs.gap
	if gap == 0 {
		gap = ReadGap
	}
	if !vs.lastRead.IsZero() && now.Sub(vs.lastRead) < gap && now.After(vs.lastRead) {
		return false, false
	}
	vs.lastRead = now
	disk = vs.reads%vs.every == 0
	vs.reads++
	return true, disk
}

// Fold folds one vitals read and records gpu_lost, gpu_idle and disk_low;
// wk is the worker as this poll judges it (alive or not: its stall is no
// matter here).
func (vs *Health) Fold(vr Reading, wk snapshot.Worker, now time.Time) {
	vs.shown = snapshot.Vitals{}
	if !vr.asked { // between two reads: the last read's figures
		if vs.haveLast && vs.fails == 0 {
			vs.shown = vs.last
		}
		return
	}
	if vr.err != nil || vr.secs == nil {
		vs.fails++
		vs.lastRead = time.Time{}         // try again at the next poll
		if vs.haveLast && vs.fails == 1 { // one failed read keeps the last figures, not two
			vs.shown = vs.last
		}
		return
	}
	vs.fails = 0
	var v snapshot.Vitals
	vs.foldGPUs(&v, vr.secs, wk, now)
	if sec, ok := vr.secs["load"]; ok && sec.Code == 0 {
		if l, err := parse.ParseLoadAvg(sec.Out); err == nil {
			v.Load1 = &l
		}
	}
	if sec, ok := vr.secs["mem"]; ok && sec.Code == 0 {
		if a, t, err := parse.ParseMemInfo(sec.Out); err == nil {
			v.MemAvailBytes, v.MemTotalBytes = &a, &t
		}
	}
	vs.foldDisk(&v, vr, now)
	vs.foldWorkerProc(&v, vr)
	vs.last, vs.haveLast = v, true
	vs.shown = v
}

// View is the vitals this poll shows.
func (vs *Health) View() snapshot.Vitals { return vs.shown }

// foldGPUs folds nvidia-smi's sections into the GPUs shown, and judges
// the GPUs lost since seen (foldLost) and all idle while the worker runs
// (foldIdle).
func (vs *Health) foldGPUs(v *snapshot.Vitals, secs map[string]parse.VitalsSection, wk snapshot.Worker, now time.Time) {
	sec, ok := secs["gpu"]
	if !ok && len(vs.gpusSeen) == 0 {
		return // no nvidia-smi: no GPU panel
	}
	if ok && sec.Code == 124 { // timeout(1): a hung nvidia-smi is no proof that a GPU is gone
		v.GPUError = "nvidia-smi did not answer within 3s"
		v.GPUs = []snapshot.GPU{}
		for idx := range vs.lost {
			v.GPUsLost = append(v.GPUsLost, idx)
		}
		sort.Ints(v.GPUsLost)
		vs.idleSince, vs.idleSent = time.Time{}, false
		return
	}
	rows, err := gpuRows(sec, ok)
	if err != nil {
		v.GPUError = parse.SanitizeString(err.Error())
	}
	pids := map[string][]int{}
	if a, ok := secs["apps"]; ok && a.Code == 0 {
		for _, app := range parse.ParseGPUApps(a.Out) {
			pids[app.GPUUUID] = append(pids[app.GPUUUID], app.PID)
		}
	}
	v.GPUs = []snapshot.GPU{}
	if vs.gpusSeen == nil {
		vs.gpusSeen, vs.lost = map[int]string{}, map[int]bool{}
	}
	present := map[int]bool{}
	allIdle := len(rows) > 0
	for _, r := range rows {
		g := snapshot.GPU{Index: r.Index, Name: r.Name, UtilPct: r.UtilPct, MemUsedMiB: r.MemUsedMiB, MemTotalMiB: r.MemTotalMiB, TempC: r.TempC, PowerW: r.PowerW}
		if r.UUID != "" {
			g.PIDs = pids[r.UUID]
			sort.Ints(g.PIDs)
		}
		v.GPUs = append(v.GPUs, g)
		present[r.Index] = true
		vs.gpusSeen[r.Index] = r.Name
		delete(vs.lost, r.Index) // back
		if r.UtilPct == nil || *r.UtilPct > 0 {
			allIdle = false
		}
	}
	vs.foldLost(v, present, len(rows), now)
	vs.foldIdle(v, allIdle, wk, now)
}

// gpuRows reads nvidia-smi's section (ok: it was in the answer): its rows,
// and what went wrong (its rows still, when it exited non-zero).
func gpuRows(sec parse.VitalsSection, ok bool) ([]parse.GPU, error) {
	switch {
	case !ok:
		return nil, fmt.Errorf("nvidia-smi is gone")
	case sec.Code != 0:
		rows, _ := parse.ParseGPUs(sec.Out)
		return rows, fmt.Errorf("nvidia-smi: exit %d: %s", sec.Code, firstLine(sec.Out))
	}
	return parse.ParseGPUs(sec.Out)
}

// foldLost lists the GPUs seen before and not present now, and notes in
// the timeline each one newly gone.
func (vs *Health) foldLost(v *snapshot.Vitals, present map[int]bool, left int, now time.Time) {
	var newly []int
	for idx := range vs.gpusSeen {
		if present[idx] {
			continue
		}
		v.GPUsLost = append(v.GPUsLost, idx)
		if !vs.lost[idx] {
			vs.lost[idx] = true
			newly = append(newly, idx)
		}
	}
	sort.Ints(v.GPUsLost)
	sort.Ints(newly)
	for _, idx := range newly {
		text := fmt.Sprintf("GPU %d (%s) dropped out: %d of %d GPUs left", idx, vs.gpusSeen[idx], left, len(vs.gpusSeen))
		if v.GPUError != "" {
			text += " (" + v.GPUError + ")"
		}
		vs.tl.Note(now, "gpu_lost", "", text)
	}
}

// foldIdle judges every GPU idle while the worker runs, for gpuIdleAfter:
// shown, and noted in the timeline once.
func (vs *Health) foldIdle(v *snapshot.Vitals, allIdle bool, wk snapshot.Worker, now time.Time) {
	if !allIdle || !snapshot.Alive(wk.State) {
		vs.idleSince, vs.idleSent = time.Time{}, false
		return
	}
	if vs.idleSince.IsZero() {
		vs.idleSince = now
	}
	if now.Sub(vs.idleSince) >= gpuIdleAfter {
		v.GPUsIdle = true
		if !vs.idleSent {
			vs.idleSent = true
			vs.tl.Note(now, "gpu_idle", "", fmt.Sprintf("every GPU idle for %s while the worker runs (pid %d)", snapshot.FormatDuration(now.Sub(vs.idleSince)), wk.PID))
		}
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120]
	}
	return strings.TrimSpace(s)
}

func (vs *Health) foldDisk(v *snapshot.Vitals, vr Reading, now time.Time) {
	if sec, ok := vr.secs["df"]; ok && sec.Code == 0 {
		if free, total, err := parse.ParseDF(sec.Out); err == nil && total > 0 {
			vs.diskPts = append(vs.diskPts, diskPoint{now, free})
			for len(vs.diskPts) > 0 && now.Sub(vs.diskPts[0].at) > diskWindow {
				vs.diskPts = vs.diskPts[1:]
			}
			d := &snapshot.Disk{FreeBytes: free, TotalBytes: total, FullInS: fullIn(vs.diskPts)}
			// low is left a fifth above the marks only, so free space
			// hovering at the floor is one disk_low, not one a minute
			floor, within := vs.floor, diskSoon.Seconds()
			if vs.diskLow {
				floor, within = floor*1.2, within*1.2
			}
			under := float64(free) < floor*float64(total)
			soon := d.FullInS != nil && *d.FullInS < within
			d.Low = under || soon
			if d.Low && !vs.diskLow {
				text := fmt.Sprintf("disk low: %s free of %s (%.1f%%)", snapshot.FormatBytes(free), snapshot.FormatBytes(total), 100*float64(free)/float64(total))
				if soon {
					text += ", full in " + snapshot.FormatDuration(time.Duration(*d.FullInS*float64(time.Second)))
				}
				vs.tl.Note(now, "disk_low", "", text)
			}
			vs.diskLow = d.Low
			vs.disk = d
		}
	}
	if vs.disk != nil {
		c := *vs.disk
		v.Disk = &c
	}
}

// fullIn is the seconds until free reaches zero at the rate free space
// fell over the window (a least-squares line through the points); nil
// when it is not falling or the window is too short to tell.
func fullIn(pts []diskPoint) *float64 {
	if len(pts) < 3 || pts[len(pts)-1].at.Sub(pts[0].at) < diskMinSpan {
		return nil
	}
	t0 := pts[0].at
	var n, sx, sy, sxx, sxy float64
	for _, p := range pts {
		x, y := p.at.Sub(t0).Seconds(), float64(p.free)
		n++
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return nil
	}
	slope := (n*sxy - sx*sy) / den // bytes per second, negative while filling
	if slope >= 0 || math.IsNaN(slope) {
		return nil
	}
	s := float64(pts[len(pts)-1].free) / -slope
	return &s
}

// foldWorkerProc folds the worker's /proc sections: its RSS, and its CPU
// share since the last sample of the same process.
func (vs *Health) foldWorkerProc(v *snapshot.Vitals, vr Reading) {
	if vr.pid <= 0 {
		vs.cpu = cpuSample{}
		return
	}
	if sec, ok := vr.secs["status"]; ok && sec.Code == 0 {
		if rss, ok := parse.ParseVmRSS(sec.Out); ok {
			v.WorkerRSSBytes = &rss
		}
	}
	cur, hz, ok := cpuSampleOf(vr)
	prev := vs.cpu
	vs.cpu = cur
	if !ok || prev.pid != cur.pid || prev.start != cur.start || cur.uptime <= prev.uptime || cur.ticks < prev.ticks {
		return
	}
	pct := float64(cur.ticks-prev.ticks) / float64(hz) / (cur.uptime - prev.uptime) * 100
	pct = math.Round(pct*10) / 10
	v.WorkerCPUPct = &pct
}

// cpuSampleOf is the worker's CPU ticks, start and the host's uptime from
// the stat, uptime and clk sections, and the clock's ticks a second; not
// ok (a zero sample) when one is missing or unreadable.
func cpuSampleOf(vr Reading) (cpuSample, int, bool) {
	st, ok1 := vr.secs["stat"]
	up, ok2 := vr.secs["uptime"]
	clk, ok3 := vr.secs["clk"]
	if !ok1 || !ok2 || !ok3 || st.Code != 0 || up.Code != 0 || clk.Code != 0 {
		return cpuSample{}, 0, false
	}
	ps, err := parse.ParseProcStat(st.Out)
	u, ok := parse.ParseUptime(up.Out)
	hz, herr := strconv.Atoi(strings.TrimSpace(clk.Out))
	if err != nil || !ok || herr != nil || hz <= 0 {
		return cpuSample{}, 0, false
	}
	return cpuSample{pid: vr.pid, start: ps.StartTime, ticks: ps.Ticks, uptime: u}, hz, true
}

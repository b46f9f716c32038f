package parse

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The host's vitals: what nvidia-smi, /proc and df print, read without I/O.
// Each parser takes a command's whole output; CRLF line ends, blank lines
// and the spaces nvidia-smi puts after its commas are fine.

// GPUQuery is the --query-gpu field list the dashboard asks nvidia-smi for,
// in the order ParseGPUs reads them (uuid last, to match compute apps).
const GPUQuery = "index,name,utilization.gpu,memory.used,memory.total,temperature.gpu,power.draw,uuid"

// GPUAppsQuery is the --query-compute-apps field list ParseGPUApps reads.
const GPUAppsQuery = "gpu_uuid,pid,used_memory"

// GPU is one row of nvidia-smi --query-gpu=GPUQuery --format=csv,noheader,nounits.
// A figure the driver does not give ([N/A], [Not Supported]) is nil.
type GPU struct {
	Index       int
	Name        string
	UUID        string
	UtilPct     *float64
	MemUsedMiB  *float64
	MemTotalMiB *float64
	TempC       *float64
	PowerW      *float64
}

// GPUApp is one row of nvidia-smi --query-compute-apps=GPUAppsQuery.
type GPUApp struct {
	GPUUUID    string
	PID        int
	UsedMemMiB *float64
}

// csvLines splits nvidia-smi's CSV output into rows of trimmed fields.
func csvLines(out string) [][]string {
	var rows [][]string
	for _, ln := range strings.Split(out, "\n") {
		ln = strings.TrimSpace(strings.TrimRight(ln, "\r"))
		if ln == "" {
			continue
		}
		f := strings.Split(ln, ",")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		rows = append(rows, f)
	}
	return rows
}

// smiNumber reads one nvidia-smi figure: "97", "612.34", with or without a
// unit ("612.34 W", "63412 MiB", "97 %"); [N/A], N/A, [Not Supported],
// [Unknown Error] and the like are nil.
func smiNumber(s string) *float64 {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i] // a unit
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !finite(v) {
		return nil
	}
	return &v
}

// ParseGPUs reads nvidia-smi --query-gpu=GPUQuery --format=csv,noheader,nounits
// (the uuid column may be missing). A row that is no GPU row (an error
// line nvidia-smi prints among them) is left out and named in the error;
// the rows that were read are returned with it.
func ParseGPUs(out string) ([]GPU, error) {
	var gpus []GPU
	var bad []string
	for _, f := range csvLines(out) {
		if len(f) < 7 {
			bad = append(bad, strings.Join(f, ","))
			continue
		}
		idx, err := strconv.Atoi(f[0])
		if err != nil {
			bad = append(bad, strings.Join(f, ","))
			continue
		}
		// a name with a comma in it: the six figures are the last fields
		// (seven with the uuid); the uuid starts with GPU- or MIG-
		tail := f[len(f)-5:]
		name := strings.Join(f[1:len(f)-5], ", ")
		g := GPU{Index: idx}
		if u := f[len(f)-1]; len(f) >= 8 && (strings.HasPrefix(u, "GPU-") || strings.HasPrefix(u, "MIG-")) {
			g.UUID = u
			tail = f[len(f)-6 : len(f)-1]
			name = strings.Join(f[1:len(f)-6], ", ")
		}
		g.Name = SanitizeString(strings.TrimSpace(name))
		g.UtilPct, g.MemUsedMiB, g.MemTotalMiB, g.TempC, g.PowerW = smiNumber(tail[0]), smiNumber(tail[1]), smiNumber(tail[2]), smiNumber(tail[3]), smiNumber(tail[4])
		gpus = append(gpus, g)
	}
	if len(bad) > 0 {
		return gpus, fmt.Errorf("nvidia-smi: %s", SanitizeString(strings.Join(bad, "; ")))
	}
	return gpus, nil
}

// ParseGPUApps reads nvidia-smi --query-compute-apps=GPUAppsQuery
// --format=csv,noheader,nounits; rows it cannot read are skipped. No
// process at all prints nothing (or "No running processes found").
func ParseGPUApps(out string) []GPUApp {
	var apps []GPUApp
	for _, f := range csvLines(out) {
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		apps = append(apps, GPUApp{GPUUUID: f[0], PID: pid, UsedMemMiB: smiNumber(f[2])})
	}
	return apps
}

// ParseLoadAvg reads /proc/loadavg: "12.31 11.90 10.02 14/2043 99812".
func ParseLoadAvg(out string) (load1 float64, err error) {
	f := strings.Fields(out)
	if len(f) == 0 {
		return 0, errors.New("loadavg: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !finite(v) || v < 0 {
		return 0, fmt.Errorf("loadavg: %q", SanitizeString(f[0]))
	}
	return v, nil
}

// ParseMemInfo reads MemTotal and MemAvailable from /proc/meminfo, in bytes.
func ParseMemInfo(out string) (avail, total int64, err error) {
	var haveA, haveT bool
	for _, ln := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(ln, "\r"), ":")
		if !ok {
			continue
		}
		n, ok := kB(v)
		switch {
		case !ok:
		case k == "MemTotal":
			total, haveT = n, true
		case k == "MemAvailable":
			avail, haveA = n, true
		}
	}
	if !haveA || !haveT {
		return 0, 0, errors.New("meminfo: no MemTotal and MemAvailable")
	}
	return avail, total, nil
}

// kB reads a /proc figure such as "  263842876 kB" as bytes.
func kB(v string) (int64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if len(f) > 1 && strings.EqualFold(f[1], "kB") {
		n *= 1024
	}
	return n, true
}

// ParseDF reads `df -P -B1 PATH` (or `df -Pk`, where -B is unknown, as on
// busybox): the header, whose "N-blocks" gives the unit, then one line
// "Filesystem 1-blocks Used Available Capacity Mounted-on" whose
// filesystem and mount point may hold spaces.
func ParseDF(out string) (free, total int64, err error) {
	unit := int64(1)
	for _, ln := range strings.Split(out, "\n") {
		f := strings.Fields(strings.TrimRight(ln, "\r"))
		if len(f) > 1 && strings.HasSuffix(f[1], "-blocks") { // the header: 1-blocks (-B1), 1024-blocks (-k)
			if n, err := strconv.ParseInt(strings.TrimSuffix(f[1], "-blocks"), 10, 64); err == nil && n > 0 {
				unit = n
			}
			continue
		}
		if free, total, ok := dfFilesystem(f, unit); ok {
			return free, total, nil
		}
	}
	return 0, 0, errors.New("df: no filesystem line")
}

// dfFilesystem reads a filesystem line's total, used and free blocks
// before its use% (its name may hold spaces: they are found from the %
// back), in bytes of unit.
func dfFilesystem(f []string, unit int64) (free, total int64, ok bool) {
	for j := 4; j < len(f); j++ {
		if !strings.HasSuffix(f[j], "%") {
			continue
		}
		if _, err := strconv.Atoi(strings.TrimSuffix(f[j], "%")); err != nil && f[j] != "-%" {
			continue
		}
		t, e1 := strconv.ParseInt(f[j-3], 10, 64)
		_, e2 := strconv.ParseInt(f[j-2], 10, 64)
		a, e3 := strconv.ParseInt(f[j-1], 10, 64)
		if e1 == nil && e2 == nil && e3 == nil && a >= 0 && t >= 0 && t <= math.MaxInt64/unit && a <= math.MaxInt64/unit {
			return a * unit, t * unit, true
		}
	}
	return 0, 0, false
}

// ProcStat is what the vitals need of /proc/PID/stat.
type ProcStat struct {
	Ticks     int64 // utime + stime, in clock ticks
	StartTime int64 // since boot, in clock ticks: tells a reused pid apart
}

// ParseProcStat reads /proc/PID/stat. The command name, in parentheses, may
// hold spaces and parentheses itself: the fields follow the last ")".
func ParseProcStat(out string) (ProcStat, error) {
	i := strings.LastIndexByte(out, ')')
	if i < 0 {
		return ProcStat{}, errors.New("stat: no command name")
	}
	f := strings.Fields(out[i+1:])
	// f[0] is field 3 (state); utime 14, stime 15, starttime 22
	if len(f) < 20 {
		return ProcStat{}, errors.New("stat: too few fields")
	}
	u, e1 := strconv.ParseInt(f[11], 10, 64)
	s, e2 := strconv.ParseInt(f[12], 10, 64)
	st, e3 := strconv.ParseInt(f[19], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil {
		return ProcStat{}, errors.New("stat: bad figures")
	}
	return ProcStat{Ticks: u + s, StartTime: st}, nil
}

// ParseVmRSS reads VmRSS from /proc/PID/status, in bytes.
func ParseVmRSS(out string) (int64, bool) {
	for _, ln := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimRight(ln, "\r"), "VmRSS:"); ok {
			return kB(v)
		}
	}
	return 0, false
}

// ParseUptime reads /proc/uptime's first figure, in seconds.
func ParseUptime(out string) (float64, bool) {
	f := strings.Fields(out)
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil && finite(v) && v >= 0
}

// finite: no NaN, no infinity (JSON has neither).
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// VitalsMark starts each section of the vitals script's output: a line
// "@@sw NAME RC" (RC the exit status of the command that printed it, -1
// when it did not run), then what it printed.
const VitalsMark = "@@sw "

// VitalsSection is one section of the vitals script's output.
type VitalsSection struct {
	Code int    // the command's exit status; -1: not run (absent, not asked)
	Out  string // what it printed
}

// SplitVitals cuts the vitals script's output into its sections by name.
func SplitVitals(out string) map[string]VitalsSection {
	secs := map[string]VitalsSection{}
	var name string
	var cur VitalsSection
	var b strings.Builder
	flush := func() {
		if name != "" {
			cur.Out = b.String()
			secs[name] = cur
		}
		b.Reset()
	}
	for _, ln := range strings.SplitAfter(out, "\n") {
		if rest, ok := strings.CutPrefix(ln, VitalsMark); ok {
			flush()
			f := strings.Fields(rest)
			name, cur = "", VitalsSection{Code: -1}
			if len(f) >= 1 {
				name = f[0]
			}
			if len(f) >= 2 {
				if c, err := strconv.Atoi(f[1]); err == nil {
					cur.Code = c
				}
			}
			continue
		}
		b.WriteString(ln)
	}
	flush()
	return secs
}

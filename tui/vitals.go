package tui

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// vitalsLine is the host's vitals on one line, each part only when it was
// read: GPU 8× util 97% 71°C 496/640 GiB 4.9 kW | disk 1.2 TiB free (full
// in 9h) | load 12.3 mem 1.4 TiB avail | worker 1.4 GiB 180%. A stale
// snapshot has no vitals, so the line is gone while the link is down. On
// a screen too narrow for it, the GPUs get a line and the rest another.
func (m Model) vitalsLine(w int) string {
	st := m.st
	var parts []string
	gpu := false
	for i, p := range vitalsParts(m.snap.Vitals) {
		t := p.text
		if p.bad {
			t = st.Bad.Render(t)
		}
		parts = append(parts, t)
		gpu = gpu || i == 0 && p.gpu
	}
	sep := st.Dim.Render(" | ")
	line := strings.Join(parts, sep)
	if ansi.StringWidth(line) <= w || len(parts) < 2 || !gpu {
		return fit(line, w)
	}
	return fit(parts[0], w) + "\n" + fit(strings.Join(parts[1:], sep), w)
}

// VitalsText is the vitals line without styles, for status's text; "" when
// nothing was read.
func VitalsText(v snapshot.Vitals) string {
	var parts []string
	for _, p := range vitalsParts(v) {
		parts = append(parts, p.text)
	}
	return strings.Join(parts, " | ")
}

type vitalsPart struct {
	text     string
	bad, gpu bool
}

func vitalsParts(v snapshot.Vitals) []vitalsPart {
	var parts []vitalsPart
	if p := gpuPart(v); p != "" {
		parts = append(parts, vitalsPart{p, len(v.GPUsLost) > 0 || v.GPUsIdle || v.GPUError != "", true})
	}
	if d := v.Disk; d != nil {
		p := "disk " + snapshot.FormatBytes(d.FreeBytes) + " free"
		if d.TotalBytes > 0 {
			p += fmt.Sprintf(" %.0f%%", 100*float64(d.FreeBytes)/float64(d.TotalBytes))
		}
		if d.FullInS != nil {
			p += " (full in " + snapshot.FormatETA(d.FullInS) + ")"
		}
		parts = append(parts, vitalsPart{text: p, bad: d.Low})
	}
	var host []string
	if v.Load1 != nil {
		host = append(host, fmt.Sprintf("load %.1f", *v.Load1))
	}
	if v.MemAvailBytes != nil {
		host = append(host, "mem "+snapshot.FormatBytes(*v.MemAvailBytes)+" avail")
	}
	if len(host) > 0 {
		parts = append(parts, vitalsPart{text: strings.Join(host, " ")})
	}
	var wk []string
	if v.WorkerRSSBytes != nil {
		wk = append(wk, snapshot.FormatBytes(*v.WorkerRSSBytes))
	}
	if v.WorkerCPUPct != nil {
		wk = append(wk, fmt.Sprintf("%.0f%%", *v.WorkerCPUPct))
	}
	if len(wk) > 0 {
		parts = append(parts, vitalsPart{text: "worker " + strings.Join(wk, " ")})
	}
	return parts
}

// gpuPart sums the GPUs up: how many, mean utilisation, the hottest, the
// memory and power of all; lost GPUs and an all-idle spell are named.
func gpuPart(v snapshot.Vitals) string {
	if v.GPUs == nil && len(v.GPUsLost) == 0 {
		return "" // no nvidia-smi: no GPU part
	}
	p := fmt.Sprintf("GPU %d×", len(v.GPUs))
	var util, used, total, power, hot float64
	var nu, nm, np, nt int
	hot = math.Inf(-1)
	for _, g := range v.GPUs {
		if g.UtilPct != nil {
			util += *g.UtilPct
			nu++
		}
		if g.MemUsedMiB != nil && g.MemTotalMiB != nil {
			used += *g.MemUsedMiB
			total += *g.MemTotalMiB
			nm++
		}
		if g.PowerW != nil {
			power += *g.PowerW
			np++
		}
		if g.TempC != nil {
			hot = math.Max(hot, *g.TempC)
			nt++
		}
	}
	if nu > 0 {
		p += fmt.Sprintf(" util %.0f%%", util/float64(nu))
	}
	if nt > 0 {
		p += fmt.Sprintf(" %.0f°C", hot)
	}
	if nm > 0 {
		p += fmt.Sprintf(" %s/%s GiB", gib(used), gib(total))
	}
	if np > 0 {
		if power >= 1000 {
			p += fmt.Sprintf(" %.1f kW", power/1000)
		} else {
			p += fmt.Sprintf(" %.0f W", power)
		}
	}
	if len(v.GPUsLost) > 0 {
		ids := make([]string, len(v.GPUsLost))
		for i, x := range v.GPUsLost {
			ids[i] = strconv.Itoa(x)
		}
		p += " LOST " + strings.Join(ids, ",")
	}
	if v.GPUsIdle {
		p += " IDLE"
	}
	if v.GPUError != "" && len(v.GPUs) == 0 {
		p += " (" + v.GPUError + ")"
	}
	return p
}

// gib is MiB as GiB: 6.2 under ten, whole above.
func gib(mib float64) string {
	g := mib / 1024
	if g < 10 {
		return strconv.FormatFloat(g, 'f', 1, 64)
	}
	return strconv.FormatFloat(g, 'f', 0, 64)
}

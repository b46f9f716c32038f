package parse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// PowerQuery is the --query-gpu field list the worker samples power with:
//
//	nvidia-smi --query-gpu=timestamp,index,uuid,power.draw --format=csv,noheader,nounits
//
// which prints one line per GPU, "2026/12/06 01:02:03.456, 0, GPU-5c6e…,
// 287.43" (NVIDIA, nvidia-smi(1) and `nvidia-smi --help-query-gpu`:
// timestamp is "the timestamp of when the query was made in format
// YYYY/MM/DD HH:MM:SS.msec"; power.draw "the last measured power draw for
// the entire board, in watts", [N/A] where power management is not
// supported; nounits drops the " W"). The sample is timed by the query's
// own timestamp, not by when the worker got the answer.
const PowerQuery = "timestamp,index,uuid,power.draw"

// smiTime is the layout of nvidia-smi's timestamp (local time).
const smiTime = "2006/01/02 15:04:05.000"

// ParsePower reads PowerQuery's output: when the query was made (in loc;
// zero when the timestamp cannot be read), the boards' watts summed, and
// how many GPUs. A GPU whose draw is not given ([N/A]) makes the sample no
// sample (an error): a sum without it would read as a drop in power.
func ParsePower(out string, loc *time.Location) (at time.Time, watts float64, gpus int, err error) {
	for _, f := range csvLines(out) {
		if len(f) != 4 {
			return time.Time{}, 0, 0, fmt.Errorf("nvidia-smi: not timestamp,index,uuid,power.draw: %.80s", SanitizeString(strings.Join(f, ",")))
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			return time.Time{}, 0, 0, fmt.Errorf("nvidia-smi: not a GPU index: %.80s", SanitizeString(f[1]))
		}
		w := smiNumber(f[3])
		if w == nil || *w < 0 {
			return time.Time{}, 0, 0, fmt.Errorf("nvidia-smi: GPU %s gives no power draw (%.20s)", f[1], SanitizeString(f[3]))
		}
		if t, err := time.ParseInLocation(smiTime, f[0], loc); err == nil && gpus == 0 {
			at = t
		}
		watts += *w
		gpus++
	}
	if gpus == 0 {
		return time.Time{}, 0, 0, fmt.Errorf("nvidia-smi: no GPU listed")
	}
	return at, watts, gpus, nil
}

// PowerSample is one read of the host's GPUs' power draw. Busy says a
// request of the worker was in flight when it was read.
type PowerSample struct {
	At    time.Time
	Watts float64 // every GPU's board draw, summed
	GPUs  int
	Busy  bool
}

// Energy is the GPUs' power integrated over time (trapezoids between
// consecutive samples), for one run on one category or summed.
//
// | figure      | what it is                                                    |
// | ----------- | ------------------------------------------------------------- |
// | Joules      | ∫ power dt over the stretches sampled                          |
// | Seconds     | the time those stretches cover                                |
// | IdleJoules, IdleSeconds | the intervals whose two samples had no request in flight (the worker waiting on a server, a gate, a backoff) |
// | GPUSeconds  | Σ interval × GPUs: what a per-GPU-hour rate charges            |
// | Stretches   | unbroken runs of samples: a run starts one, a gap longer than the limit or a change in the GPUs starts another; a restart is such a break, never a spike |
// | Records     | records kept while measured: J per kept record = Joules / Records |
type Energy struct {
	Joules      float64 `json:"joules"`
	Seconds     float64 `json:"seconds"`
	IdleJoules  float64 `json:"idle_joules"`
	IdleSeconds float64 `json:"idle_seconds"`
	GPUSeconds  float64 `json:"gpu_seconds"`
	Stretches   int     `json:"stretches"`
	Samples     int     `json:"samples"`
	Records     int64   `json:"records"`
}

// Add sums two integrals (two runs, two categories).
func (e Energy) Add(o Energy) Energy {
	return Energy{
		Joules: e.Joules + o.Joules, Seconds: e.Seconds + o.Seconds,
		IdleJoules: e.IdleJoules + o.IdleJoules, IdleSeconds: e.IdleSeconds + o.IdleSeconds,
		GPUSeconds: e.GPUSeconds + o.GPUSeconds, Stretches: e.Stretches + o.Stretches,
		Samples: e.Samples + o.Samples, Records: e.Records + o.Records,
	}
}

// KWh is Joules in kilowatt-hours.
func (e Energy) KWh() float64 { return e.Joules / 3.6e6 }

// PowerIntegrator integrates samples as they come, in constant memory
// (the last sample only).
type PowerIntegrator struct {
	// MaxGap is the longest interval integrated; a longer one breaks the
	// integral (the worker: 3 sample periods)
	MaxGap time.Duration
	E      Energy
	last   PowerSample
	has    bool
}

// Add integrates the interval from the last sample to s: a trapezoid,
// unless it is longer than MaxGap, goes backwards, or the GPUs changed
// (then s starts a new stretch).
func (p *PowerIntegrator) Add(s PowerSample) {
	p.E.Samples++
	dt := s.At.Sub(p.last.At).Seconds()
	if !p.has || dt <= 0 || s.At.Sub(p.last.At) > p.MaxGap || s.GPUs != p.last.GPUs {
		p.E.Stretches++
		p.last, p.has = s, true
		return
	}
	j := (p.last.Watts + s.Watts) / 2 * dt
	p.E.Joules += j
	p.E.Seconds += dt
	p.E.GPUSeconds += dt * float64(s.GPUs)
	if !p.last.Busy && !s.Busy {
		p.E.IdleJoules += j
		p.E.IdleSeconds += dt
	}
	p.last = s
}

// Break ends the stretch: the next sample starts a new one (a sample
// that could not be read).
func (p *PowerIntegrator) Break() { p.has = false }

// CostRate is pipeline.toml's [cost]: a price per kWh, or per GPU-hour
// (a rented GPU's price, whatever it draws), in Currency.
type CostRate struct {
	PerKWh     float64 `toml:"per_kwh" json:"per_kwh,omitempty"`
	PerGPUHour float64 `toml:"per_gpu_hour" json:"per_gpu_hour,omitempty"`
	Currency   string  `toml:"currency" json:"currency,omitempty"`
}

// Check says what is wrong with a rate: negative or not a number (TOML's
// nan is no cost, its inf a cost JSON cannot hold), or both set.
func (c CostRate) Check() error {
	switch {
	case !(c.PerKWh >= 0 && c.PerGPUHour >= 0) || math.IsInf(c.PerKWh+c.PerGPUHour, 0):
		return fmt.Errorf("[cost] per_kwh and per_gpu_hour are prices, not negative, nan or inf")
	case c.PerKWh > 0 && c.PerGPUHour > 0:
		return fmt.Errorf("[cost] set per_kwh or per_gpu_hour, not both")
	}
	return nil
}

// Cost is what e cost at the rate; false when no rate is set.
func (c CostRate) Cost(e Energy) (float64, bool) {
	switch {
	case c.PerKWh > 0:
		return e.KWh() * c.PerKWh, true
	case c.PerGPUHour > 0:
		return e.GPUSeconds / 3600 * c.PerGPUHour, true
	}
	return 0, false
}

func (c CostRate) unit() string {
	cur := SanitizeString(c.Currency) // pipeline.toml is the host's text
	if cur == "" {
		cur = "(no currency set)"
	}
	if c.PerKWh > 0 {
		return fmt.Sprintf("%s at %g/kWh", cur, c.PerKWh)
	}
	return fmt.Sprintf("%s at %g/GPU-hour", cur, c.PerGPUHour)
}

// KWhText is kWh in every view's words: three digits ("0.256", "56.3"),
// whole with thousands past a thousand ("7,526", where %.3g says
// "7.53e+03").
func KWhText(kwh float64) string {
	if kwh >= 1000 {
		return Thousands(int64(kwh + 0.5))
	}
	return fmt.Sprintf("%.3g", kwh)
}

// EnergyText is the energy in one line, the words every view prints
// after "energy: "; e nil is "not measured".
func EnergyText(e *Energy, rate CostRate) string {
	if e == nil || e.Samples == 0 {
		return "not measured (the worker read no GPU power: no nvidia-smi on the host, or a worker older than the measure)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s kWh over %s", KWhText(e.KWh()), FormatDuration(time.Duration(e.Seconds*float64(time.Second))))
	if e.Seconds > 0 {
		fmt.Fprintf(&b, " (mean %.0f W", e.Joules/e.Seconds)
		if e.IdleSeconds > 0 {
			fmt.Fprintf(&b, "; idle %.0f W over %s", e.IdleJoules/e.IdleSeconds, FormatDuration(time.Duration(e.IdleSeconds*float64(time.Second))))
		}
		b.WriteString(")")
	}
	if e.Records > 0 {
		fmt.Fprintf(&b, ", %s J per kept record", Thousands(int64(e.Joules/float64(e.Records)+0.5)))
	}
	if c, ok := rate.Cost(*e); ok {
		fmt.Fprintf(&b, ", cost %.2f %s", c, rate.unit())
	}
	if e.Stretches > 1 {
		fmt.Fprintf(&b, "; %d stretches (a restart or a gap in the samples breaks the integral)", e.Stretches)
	}
	return b.String()
}

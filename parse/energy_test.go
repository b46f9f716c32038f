package parse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPowerIntegralMatchesPython integrates random samples (power that
// changes, idle stretches, gaps longer than the limit, unread samples, a
// GPU dropping out) and checks every figure against scripts/energy.py's.
func TestPowerIntegralMatchesPython(t *testing.T) {
	py := python(t)
	r := rand.New(rand.NewPCG(7, 41))
	const period = 5 * time.Second
	p := PowerIntegrator{MaxGap: 3 * period}
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	at := t0
	var in bytes.Buffer
	for i := 0; i < 2000; i++ {
		step := period + time.Duration(r.IntN(2000))*time.Millisecond
		if r.IntN(100) == 0 {
			step = 10 * period // a gap: the worker stopped, or the host slept
		}
		at = at.Add(step)
		if r.IntN(150) == 0 {
			p.Break()
			in.WriteString(`{"break": true}` + "\n")
			continue
		}
		s := PowerSample{At: at, Watts: 80 + r.Float64()*600, GPUs: 8, Busy: r.IntN(4) != 0}
		if r.IntN(500) == 0 {
			s.GPUs = 7
		}
		p.Add(s)
		b, _ := json.Marshal(map[string]any{"t": at.Sub(t0).Seconds(), "watts": s.Watts, "gpus": s.GPUs, "busy": s.Busy})
		in.Write(append(b, '\n'))
	}
	cmd := exec.Command(py, "../scripts/energy.py", fmt.Sprint(p.MaxGap.Seconds()))
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("energy.py: %v", err)
	}
	var want struct {
		Joules, Seconds, IdleJoules, IdleSeconds float64
		Stretches                                int
	}
	var raw map[string]float64
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatal(err)
	}
	want.Joules, want.Seconds, want.IdleJoules, want.IdleSeconds, want.Stretches = raw["joules"], raw["seconds"], raw["idle_joules"], raw["idle_seconds"], int(raw["stretches"])
	e := p.E
	near := func(name string, got, w float64) {
		if math.Abs(got-w) > 1e-6*math.Max(1, math.Abs(w)) {
			t.Errorf("%s = %v, Python says %v", name, got, w)
		}
	}
	near("joules", e.Joules, want.Joules)
	near("seconds", e.Seconds, want.Seconds)
	near("idle joules", e.IdleJoules, want.IdleJoules)
	near("idle seconds", e.IdleSeconds, want.IdleSeconds)
	if e.Stretches != want.Stretches || e.Stretches < 2 {
		t.Errorf("stretches = %d, Python says %d (the gaps must break it)", e.Stretches, want.Stretches)
	}
	if e.IdleSeconds == 0 || e.IdleSeconds >= e.Seconds {
		t.Errorf("idle %v of %v s: the samples hold both", e.IdleSeconds, e.Seconds)
	}
}

// TestPowerRestartIsABreak: two runs a quarter of an hour apart, each
// integrated on its own and summed, cover only their own time; the
// restart is not one trapezoid across the gap.
func TestPowerRestartIsABreak(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	run := func(start time.Time, w float64) Energy {
		p := PowerIntegrator{MaxGap: 15 * time.Second}
		for i := 0; i <= 12; i++ { // one minute at w
			p.Add(PowerSample{At: start.Add(time.Duration(i) * 5 * time.Second), Watts: w, GPUs: 1, Busy: true})
		}
		return p.E
	}
	sum := SumEnergy(ptr(run(t0, 300)), ptr(run(t0.Add(15*time.Minute), 500)))
	if sum.Seconds != 120 || sum.Joules != 60*300+60*500 || sum.Stretches != 2 {
		t.Errorf("two runs = %+v, want 120 s, %d J, 2 stretches", *sum, 60*300+60*500)
	}
	if txt := EnergyText(sum, CostRate{}); !strings.Contains(txt, "2 stretches") {
		t.Errorf("text %q does not say the break", txt)
	}
}

func ptr[T any](v T) *T { return &v }

func TestParsePower(t *testing.T) {
	// nvidia-smi --query-gpu=timestamp,index,uuid,power.draw --format=csv,noheader,nounits
	at, w, n, err := ParsePower("2026/12/06 01:02:03.456, 0, GPU-5c6e0d3a-1f2b-4c3d-8e9f-0a1b2c3d4e5f, 287.43\r\n2026/12/06 01:02:03.456, 1, GPU-6d7f1e4b-2a3c-4d5e-9f0a-1b2c3d4e5f60, 64.10\n", time.UTC)
	if err != nil || n != 2 || math.Abs(w-351.53) > 1e-9 || !at.Equal(time.Date(2026, 12, 6, 1, 2, 3, 456e6, time.UTC)) {
		t.Errorf("ParsePower = %v, %v W, %d GPUs, %v", at, w, n, err)
	}
	for _, bad := range []string{"", "2026/12/06 01:02:03.456, 0, GPU-x, [N/A]\n", "2026/12/06 01:02:03.456, 0, GPU-x, [Not Supported]\n", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "2026/12/06 01:02:03.456, x, GPU-x, 10\n", "0, GPU-x, 10\n"} {
		if _, _, _, err := ParsePower(bad, time.UTC); err == nil {
			t.Errorf("ParsePower(%q): no error", bad)
		}
	}
}

// TOML's nan and inf are no prices: nan would be no cost, inf a cost
// --json cannot hold.
func TestCostRateNotANumber(t *testing.T) {
	for _, bad := range []string{"per_kwh = nan", "per_kwh = inf", "per_gpu_hour = inf", "per_gpu_hour = nan"} {
		if _, err := ParseManifest([]byte("[cost]\n" + bad + "\n")); err == nil {
			t.Errorf("%s: no error (a NaN is no cost; an Inf fails --json)", bad)
		}
	}
}

func TestCostRate(t *testing.T) {
	e := Energy{Joules: 3.6e6 * 2, GPUSeconds: 8 * 3600, Samples: 10, Seconds: 3600}
	if c, ok := (CostRate{PerKWh: 0.3}).Cost(e); !ok || math.Abs(c-0.6) > 1e-12 {
		t.Errorf("per kWh: %v %v", c, ok)
	}
	if c, ok := (CostRate{PerGPUHour: 2}).Cost(e); !ok || c != 16 {
		t.Errorf("per GPU-hour: %v %v", c, ok)
	}
	if _, ok := (CostRate{}).Cost(e); ok {
		t.Error("no rate: a cost")
	}
	if (CostRate{PerKWh: 1, PerGPUHour: 1}).Check() == nil || (CostRate{PerKWh: -1}).Check() == nil {
		t.Error("a bad rate passes")
	}
	if _, err := ParseManifest([]byte("[cost]\nper_kwh = 0.3\nper_gpu_hour = 2\n")); err == nil {
		t.Error("pipeline.toml with both rates: no error")
	}
	m, err := ParseManifest([]byte("[cost]\nper_kwh = 0.3\ncurrency = \"EUR\"\n"))
	if err != nil || m.Cost.PerKWh != 0.3 || m.Cost.Currency != "EUR" {
		t.Errorf("[cost]: %+v %v", m.Cost, err)
	}
	if txt := EnergyText(&e, m.Cost); !strings.Contains(txt, "cost 0.60 EUR at 0.3/kWh") {
		t.Errorf("text: %q", txt)
	}
	if txt := EnergyText(nil, m.Cost); !strings.Contains(txt, "not measured") {
		t.Errorf("nil energy: %q", txt)
	}
}

// A week of 64 GPUs is thousands of kWh: every view says "7,526 kWh", not
// %.3g's "7.53e+03 kWh"; a small figure keeps its three digits.
func TestKWhWords(t *testing.T) {
	big := Energy{Joules: 7526 * 3.6e6, Seconds: 7 * 86400, GPUSeconds: 64 * 7 * 86400, Samples: 100}
	for _, txt := range []string{EnergyText(&big, CostRate{}), RunTally{Energy: &big}.Brief()} {
		if !strings.Contains(txt, "7,526 kWh") {
			t.Errorf("%q", txt)
		}
	}
	if got := KWhText(0.2564); got != "0.256" {
		t.Errorf("small: %q", got)
	}
}

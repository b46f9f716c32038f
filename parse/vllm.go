package parse

import (
	"strings"
)

// VLLMStats is vLLM's periodic stats line (V0 and V1 engines). Percent
// values stay percents (0–100), as vLLM prints them.
type VLLMStats struct {
	Engine          string // "000" for "Engine 000:", "2 Engines Aggregated", or ""
	PromptTokS      Opt[float64]
	GenTokS         Opt[float64]
	Running         Opt[int]
	Waiting         Opt[int] // "Waiting" (V1) or "Pending" (V0)
	Swapped         Opt[int]
	Preemptions     Opt[int]
	KVUsagePct      Opt[float64] // GPU KV cache usage
	CPUKVUsagePct   Opt[float64]
	PrefixHitPct    Opt[float64]
	CPUPrefixHitPct Opt[float64]
	Fields          []Field
}

// parseVLLMStats reads "Engine 000: Avg prompt throughput: 0.0 tokens/s, ..."
// and the V0 "Prefix cache hit rate: GPU: 1.00%, CPU: 0.00%".
func parseVLLMStats(msg string) (VLLMStats, bool) {
	var s VLLMStats
	rest := msg
	if strings.HasPrefix(rest, "Engine ") {
		e, r, ok := strings.Cut(rest[len("Engine "):], ": ")
		if !ok {
			return s, false
		}
		s.Engine, rest = e, r
	} else if i := strings.Index(rest, " Engines Aggregated: "); i > 0 && i < 6 {
		s.Engine, rest = rest[:i+len(" Engines Aggregated")], rest[i+len(" Engines Aggregated: "):]
	}
	if strings.HasPrefix(rest, "Prefix cache hit rate: GPU: ") {
		gpu, cpu, _ := strings.Cut(rest[len("Prefix cache hit rate: GPU: "):], ", CPU: ")
		s.PrefixHitPct = optFloat(strings.TrimSuffix(gpu, "%"))
		s.CPUPrefixHitPct = optFloat(strings.TrimSuffix(cpu, "%"))
		return s, s.PrefixHitPct.OK
	}
	if !strings.HasPrefix(rest, "Avg prompt throughput: ") {
		return s, false
	}
	rest = strings.TrimSuffix(rest, ".")
	for _, item := range strings.Split(rest, ", ") {
		k, v, ok := strings.Cut(item, ": ")
		if !ok {
			continue
		}
		s.Fields = append(s.Fields, Field{Key: k, Value: v})
		s.set(k, strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(v, " tokens/s"), " reqs"), "%"))
	}
	return s, s.GenTokS.OK
}

// set keeps the figure of a stats line's field k, its unit trimmed.
func (s *VLLMStats) set(k, v string) {
	switch k {
	case "Avg prompt throughput":
		s.PromptTokS = optFloat(v)
	case "Avg generation throughput":
		s.GenTokS = optFloat(v)
	case "Running":
		s.Running = optInt(v)
	case "Waiting", "Pending":
		s.Waiting = optInt(v)
	case "Swapped":
		s.Swapped = optInt(v)
	case "Preemptions":
		s.Preemptions = optInt(v)
	case "GPU KV cache usage":
		s.KVUsagePct = optFloat(v)
	case "CPU KV cache usage":
		s.CPUKVUsagePct = optFloat(v)
	case "Prefix cache hit rate":
		s.PrefixHitPct = optFloat(v)
	}
}

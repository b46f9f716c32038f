package parse

import (
	"strconv"
	"strings"
)

// Phase tells a prefill batch line from a decode batch line.
type Phase uint8

const (
	Prefill Phase = iota + 1
	Decode
)

func (p Phase) String() string {
	switch p {
	case Prefill:
		return "prefill"
	case Decode:
		return "decode"
	}
	return ""
}

// Field is one "key: value" item of a stats line, kept as printed.
type Field struct {
	Key, Value string
}

// Batch is a scheduler "Prefill batch" or "Decode batch" line, in any of the
// SGLang versions. Known keys are typed; every key, known or not, is in Fields.
type Batch struct {
	Phase        Phase
	Iter         int64 // "[12345]" when SGLANG_LOG_FORWARD_ITERS is set, else -1
	GPUID        int   // v0.1 "[gpu_id=N]", else -1
	MixedRunning int   // "Prefill batch(mixed #running-req: N)", else -1

	RunningReqs   Opt[int]
	QueueReqs     Opt[int]
	NewSeq        Opt[int]
	NewTokens     Opt[int]
	CachedTokens  Opt[int]
	UsedTokens    Opt[int] // "#token", else "#full token" (hybrid SWA/Mamba), else "#gpu token" (HiSparse)
	PendingTokens Opt[int]

	// TokenUsage is the fullest KV pool, a 0–1 fraction as SGLang prints it:
	// the max of "token usage", "full token usage", "swa token usage",
	// "mamba usage" and HiSparse's "gpu token usage" (SGLang's own gauge
	// takes the same max). Host memory ("cpu token usage") is not a pool
	// that stalls decoding and is left out.
	TokenUsage      Opt[float64]
	GenThroughput   Opt[float64] // token/s
	InputThroughput Opt[float64] // token/s
	CacheHitPct     Opt[float64] // "cache hit rate: 12.34%" (old versions), in percent
	AcceptLen       Opt[float64]
	Graph           Opt[bool] // "cuda graph: True" (or cpu/npu/musa graph)

	Fields []Field

	usedRank int8 // which key set UsedTokens: 3 #token, 2 #full token, 1 #gpu token
}

// parseBatch reads the message part of a batch line; ok is false when the
// message is not one.
func parseBatch(msg string) (b Batch, ok bool) {
	b.Iter, b.GPUID, b.MixedRunning = -1, -1, -1
	if strings.HasPrefix(msg, "[gpu_id=") {
		end := strings.IndexByte(msg, ']')
		if end < 0 {
			return b, false
		}
		n, okn := digits(msg[len("[gpu_id="):end])
		if !okn {
			return b, false
		}
		b.GPUID = n
		msg = strings.TrimPrefix(msg[end+1:], " ")
	}
	var rest string
	switch {
	case strings.HasPrefix(msg, "Decode batch"):
		b.Phase, rest = Decode, msg[len("Decode batch"):]
	case strings.HasPrefix(msg, "Prefill batch"):
		b.Phase, rest = Prefill, msg[len("Prefill batch"):]
	default:
		return b, false
	}
	if strings.HasPrefix(rest, "(mixed #running-req: ") {
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return b, false
		}
		n, okn := digits(rest[len("(mixed #running-req: "):end])
		if !okn {
			return b, false
		}
		b.MixedRunning, rest = n, rest[end+1:]
	}
	if strings.HasPrefix(rest, " [") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return b, false
		}
		n, okn := digits(rest[2:end])
		if !okn {
			return b, false
		}
		b.Iter, rest = int64(n), rest[end+1:]
	}
	if len(rest) < 1 || (rest[0] != '.' && rest[0] != ',') {
		return b, false
	}
	rest = strings.TrimLeft(rest[1:], " ")
	rest = strings.TrimRight(rest, ", ")
	b.Fields = make([]Field, 0, strings.Count(rest, ", ")+1)
	for rest != "" {
		item := rest
		if i := strings.Index(rest, ", "); i >= 0 {
			item, rest = rest[:i], rest[i+2:]
		} else {
			rest = ""
		}
		if item == "" {
			continue
		}
		i := strings.LastIndex(item, ": ")
		if i < 0 {
			b.Fields = append(b.Fields, Field{Key: item})
			continue
		}
		k, v := item[:i], item[i+2:]
		b.Fields = append(b.Fields, Field{Key: k, Value: v})
		b.set(k, v)
	}
	return b, true
}

func (b *Batch) set(k, v string) {
	switch k {
	case "#running-req":
		b.RunningReqs = optInt(v)
	case "#queue-req":
		b.QueueReqs = optInt(v)
	case "#new-seq":
		b.NewSeq = optInt(v)
	case "#new-token":
		b.NewTokens = optInt(v)
	case "#cached-token":
		b.CachedTokens = optInt(v)
	case "#token":
		b.UsedTokens = optInt(v)
		b.usedRank = 3
	case "#full token":
		if b.usedRank < 2 {
			b.UsedTokens, b.usedRank = optInt(v), 2
		}
	case "#gpu token":
		if b.usedRank < 1 {
			b.UsedTokens, b.usedRank = optInt(v), 1
		}
	case "#pending-token":
		b.PendingTokens = optInt(v)
	case "token usage", "full token usage", "swa token usage", "mamba usage", "gpu token usage":
		if u := optFloat(v); u.OK && (!b.TokenUsage.OK || u.V > b.TokenUsage.V) {
			b.TokenUsage = u
		}
	case "gen throughput (token/s)":
		b.GenThroughput = optFloat(v)
	case "input throughput (token/s)":
		b.InputThroughput = optFloat(v)
	case "cache hit rate":
		b.CacheHitPct = optFloat(strings.TrimSuffix(v, "%"))
	case "accept len":
		b.AcceptLen = optFloat(v)
	case "cuda graph", "cpu graph", "npu graph", "musa graph":
		switch v {
		case "True":
			b.Graph = some(true)
		case "False":
			b.Graph = some(false)
		}
	}
}

// Num returns a field's value as a number, whatever its key. A trailing "%"
// is dropped, so the result is then a percent.
func (b *Batch) Num(key string) (float64, bool) {
	for _, f := range b.Fields {
		if f.Key == key {
			o := optFloat(strings.TrimSuffix(f.Value, "%"))
			return o.V, o.OK
		}
	}
	return 0, false
}

func optInt(v string) Opt[int] {
	if n, ok := digits(v); ok {
		return some(n)
	}
	if n, err := strconv.Atoi(v); err == nil {
		return some(n)
	}
	return Opt[int]{}
}

func optFloat(v string) Opt[float64] {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil {
		return Opt[float64]{}
	}
	return some(f)
}

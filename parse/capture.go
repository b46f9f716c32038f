package parse

import (
	"fmt"
	"math"
)

// Capture is pipeline.toml's [capture]: what the next stage, EAGLE-3's
// hidden-state capture (SpecForge's prepare_hidden_states), stores of each
// token of each record, prompt and completion: the target's last hidden
// state and three auxiliary layers' (4 x hidden_size values) in the
// model's dtype. Users meet its disk after the fact: 1.17 GB a sample at
// 64K for GPT-OSS-120B, 12+ TB for Llama-3.1-8B over 300k rows.
type Capture struct {
	HiddenSize int `toml:"hidden_size" json:"hidden_size,omitempty"` // the target's config.json hidden_size; 0: no forecast
	Layers     int `toml:"layers" json:"layers,omitempty"`           // hidden states kept a token (default 4)
	DtypeBytes int `toml:"dtype_bytes" json:"dtype_bytes,omitempty"` // bytes a value (default 2: bf16)
}

// BytesPerToken is what one token's hidden states take (0: no forecast).
func (c Capture) BytesPerToken() int64 {
	if c.HiddenSize <= 0 {
		return 0
	}
	layers, b := c.Layers, c.DtypeBytes
	if layers <= 0 {
		layers = 4
	}
	if b <= 0 {
		b = 2
	}
	return int64(layers) * int64(c.HiddenSize) * int64(b)
}

// CaptureForecast is the disk the next stage will need for the records
// kept so far, against the root's free disk.
type CaptureForecast struct {
	Bytes         int64  `json:"bytes"`
	Tokens        int64  `json:"tokens"`            // prompt and completion tokens of the records counted
	BytesPerToken int64  `json:"bytes_per_token"`   // Capture.BytesPerToken
	Partial       bool   `json:"partial,omitempty"` // records whose counts are unknown are not in it: at least this much
	FreeBytes     *int64 `json:"free_bytes,omitempty"`
	Fits          *bool  `json:"fits,omitempty"` // nil while the free disk is unknown
}

// ForecastCapture is the one forecast every view shows: tokens (prompt and
// completion) times c's bytes a token, against free (nil: unknown). nil
// when [capture] names no hidden_size.
func ForecastCapture(c Capture, tokens int64, partial bool, free *int64) *CaptureForecast {
	per := c.BytesPerToken()
	if per == 0 {
		return nil
	}
	bytes := int64(math.MaxInt64) // saturated: a bogus count of 1e15 tokens must not wrap to a fit
	if tokens < math.MaxInt64/per {
		bytes = tokens * per
	}
	f := &CaptureForecast{Bytes: bytes, Tokens: tokens, BytesPerToken: per, Partial: partial}
	if free != nil {
		fits := f.Bytes <= *free
		f.FreeBytes, f.Fits = free, &fits
	}
	return f
}

// Text says it in the words every view prints: "hidden states for the
// next stage: 6.4 TiB (210M tokens at 32 KiB); 1.3 TiB free on the root's
// disk: it will not fit".
func (f CaptureForecast) Text() string {
	at := ""
	if f.Partial {
		at = "at least "
	}
	s := fmt.Sprintf("hidden states for the next stage: %s%s (%s tokens at %s)", at, FormatBytes(f.Bytes), ShortCount(f.Tokens), FormatBytes(f.BytesPerToken))
	switch {
	case f.Fits == nil:
	case *f.Fits:
		s += fmt.Sprintf("; %s free on the root's disk", FormatBytes(*f.FreeBytes))
	default:
		s += fmt.Sprintf("; %s free on the root's disk: it will not fit", FormatBytes(*f.FreeBytes))
	}
	return s
}

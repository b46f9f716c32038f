package parse

import (
	"strings"
	"testing"
)

// The next stage's disk: 4 hidden states of H values in bf16 a token
// (Llama-3.1-8B, H 4,096: 32 KiB a token), against the free disk.
func TestForecastCapture(t *testing.T) {
	t.Parallel()
	if ForecastCapture(Capture{}, 1e9, false, nil) != nil {
		t.Error("a forecast with no hidden_size")
	}
	free := int64(1 << 40)
	f := ForecastCapture(Capture{HiddenSize: 4096}, 210_000_000, true, &free)
	if f.BytesPerToken != 32768 || f.Bytes != 210_000_000*32768 || f.Fits == nil || *f.Fits {
		t.Fatalf("%+v", f)
	}
	if got, want := f.Text(), "hidden states for the next stage: at least 6.3 TiB (210M tokens at 32 KiB); 1.0 TiB free on the root's disk: it will not fit"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	g := ForecastCapture(Capture{HiddenSize: 2880, Layers: 4, DtypeBytes: 2}, 1000, false, nil)
	if g.Fits != nil || strings.Contains(g.Text(), "free") || g.Bytes != 1000*23040 {
		t.Errorf("unknown free disk: %+v %q", g, g.Text())
	}
	if h := ForecastCapture(Capture{HiddenSize: 4096}, 1e15, false, &free); h.Bytes <= 0 || *h.Fits {
		t.Errorf("a bogus 1e15 tokens wrapped to a fit: %+v", h)
	}
	m, err := ParseManifest([]byte("[capture]\nhidden_size = 4096\nlayers = 4\ndtype_bytes = 2\n"))
	if err != nil || m.Capture.BytesPerToken() != 32768 {
		t.Errorf("[capture]: %+v %v", m.Capture, err)
	}
	if _, err := ParseManifest([]byte("[capture]\nhidden_size = -1\n")); err == nil {
		t.Error("a negative hidden_size parsed")
	}
	if _, err := ParseManifest([]byte("[capture]\nhiden_size = 4096\n")); err == nil {
		t.Error("a typo in [capture] parsed")
	}
}

package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// erasNight: B3's records came from the old script (no runs.jsonl),
// placed by their own time in the server log's FP8 era and auto era, 30
// with no time; the row and the run history (H) say so, with each era's
// settings from its start line.
func erasNight() snapshot.Snapshot {
	s := running()
	c := &s.Categories[2]
	c.CompletionTokens = ip(726_000)
	const args = "kv_cache_dtype=%s model_path=/models/qwen3-8b dtype=auto mem_fraction_static=0.88"
	c.Configs = []snapshot.ConfigCount{
		{Config: "fp8-kv", Inferred: true, Args: strings.Replace(args, "%s", "fp8_e4m3", 1), Records: 1652, Tokens: 170_156},
		{Config: "auto-kv", Inferred: true, Args: strings.Replace(args, "%s", "auto", 1), Records: 5348, Tokens: 550_844},
		{Config: parse.ConfigNoTime, Records: 30, Tokens: 3085},
	}
	return s
}

func TestGoldenErasBox(t *testing.T) {
	for _, w := range []int{80, 160} {
		t.Run(itoa(w), func(t *testing.T) {
			f := newFake()
			f.snap = erasNight()
			f.conn = snapshot.Connection{State: snapshot.LinkConnected, RTTms: 1.2, LastContact: tp(t0.Add(-time.Second))}
			m, _ := newModel(f, w, 40, Config{PollEvery: 2 * time.Second, Plain: true})
			m.sel = 2
			box := m.runsBox(w)
			for _, l := range strings.Split(box, "\n") {
				if ansi.StringWidth(l) > w {
					t.Fatalf("line wider than the screen: %q", l)
				}
			}
			if !strings.Contains(ansi.Strip(box), parse.InferredFromLog) || strings.Contains(box, "every record here is") {
				t.Errorf("the run history does not say the records were placed by the server log:\n%s", box)
			}
			golden.RequireEqual(t, screen(m)+"\n"+box)
		})
	}
}

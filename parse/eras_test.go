package parse

import (
	"strings"
	"testing"
	"time"
)

// The three launch lines as SGLang and vLLM print them (heads cited in
// eras.go), with the arguments an era is told by among others.
func TestParseLaunchReadsEachForm(t *testing.T) {
	cases := []struct{ line, want string }{
		{`[2026-12-05 05:15:00] server_args=ServerArgs(model_path='/m/qwen', tokenizer_path='/m/qwen', dtype='auto', kv_cache_dtype='fp8_e4m3', quantization=None, mem_fraction_static=0.88, chat_template=None, json_model_override_args='{"a": [1, 2]}', speculative_algorithm='EAGLE3', speculative_num_steps=3, port=30000)`,
			"kv_cache_dtype=fp8_e4m3 model_path=/m/qwen dtype=auto mem_fraction_static=0.88 speculative_algorithm=EAGLE3 speculative_num_steps=3"},
		{`[2026-12-05 10:20:00] server_args={'model_path': '/m/qwen', 'kv_cache_dtype': 'auto', 'quantization': 'fp8', 'mem_fraction_static': 0.9, 'disable_radix_cache': False}`,
			"kv_cache_dtype=auto quantization=fp8 model_path=/m/qwen mem_fraction_static=0.9"},
		{`(APIServer pid=15) INFO 12-04 11:06:00 [utils.py:233] non-default args: {'model': 'm', 'kv_cache_dtype': 'fp8', 'gpu_memory_utilization': 0.95, 'speculative_config': {'method': 'eagle3', 'num_speculative_tokens': 3}}`,
			"kv_cache_dtype=fp8 model=m gpu_memory_utilization=0.95 speculative_config={'method': 'eagle3', 'num_speculative_tokens': 3}"},
	}
	for _, c := range cases {
		ev := ParseServerLine(c.line)
		if ev.Kind != SStartup || ev.Startup.Stage != "launch" {
			t.Fatalf("%q: not a launch (%v %q)", c.line, ev.Kind, ev.Startup.Stage)
		}
		got, ok := ParseLaunch(ev.Msg)
		if !ok || strings.Join(got, " ") != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.line, strings.Join(got, " "), c.want)
		}
	}
	if _, ok := ParseLaunch("Load weight begin. avail mem=77.12 GB"); ok {
		t.Error("a startup line that is no launch read as one")
	}
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Records are placed by minute: one before the first start is outside,
// one in a start's own minute is the era before's, one with no time is
// unplaced; two starts with one configuration add up.
func TestPlaceRecordsByEra(t *testing.T) {
	fp8 := []string{"kv_cache_dtype=fp8_e4m3", "model_path=/m"}
	auto := []string{"kv_cache_dtype=auto", "model_path=/m"}
	eras := Eras([]ServerLaunch{
		{At: at("2026-12-05T14:15:30Z"), Settings: auto},
		{At: at("2026-12-05T05:15:00Z"), Settings: fp8},
		{At: at("2026-12-05T16:00:00Z"), Settings: auto},
	})
	if len(eras) != 3 || eras[0].Label != "fp8-kv" || eras[1].Label != "auto-kv" || eras[2].Label != "auto-kv" {
		t.Fatalf("eras: %+v", eras)
	}
	var r RecordTimes
	add := func(ts string, n int, tok int64) {
		for range n {
			r.Add(at(ts), true, OneRecord(tok, true))
		}
	}
	add("2026-12-05T05:00:00Z", 1, 10)  // before any start
	add("2026-12-05T05:16:10Z", 3, 100) // fp8
	add("2026-12-05T14:15:59Z", 2, 100) // the auto start's own minute: fp8
	add("2026-12-05T14:16:00Z", 4, 50)  // auto
	add("2026-12-05T17:00:00Z", 1, 50)  // the second auto era
	r.Add(time.Time{}, false, OneRecord(0, false))
	p := PlaceRecords(eras, r)
	want := []EraCount{{Label: "fp8-kv", Settings: "kv_cache_dtype=fp8_e4m3 model_path=/m", Tally: Tally{Records: 5, Tokens: 500}},
		{Label: "auto-kv", Settings: "kv_cache_dtype=auto model_path=/m", Tally: Tally{Records: 5, Tokens: 250}}}
	if len(p.Eras) != 2 || p.Eras[0] != want[0] || p.Eras[1] != want[1] {
		t.Errorf("eras: %+v", p.Eras)
	}
	if p.Outside.Records != 1 || p.NoTime != (Tally{Records: 1, Unknown: 1}) {
		t.Errorf("outside %+v, no time %+v", p.Outside, p.NoTime)
	}
}

// Two eras with one KV dtype and other settings apart keep apart.
func TestErasTellSameDtypeApart(t *testing.T) {
	eras := Eras([]ServerLaunch{
		{At: at("2026-12-05T01:00:00Z"), Settings: []string{"kv_cache_dtype=auto", "model_path=/a"}},
		{At: at("2026-12-05T02:00:00Z"), Settings: []string{"kv_cache_dtype=auto", "model_path=/b"}},
	})
	if eras[0].Label != "auto-kv" || !strings.HasPrefix(eras[1].Label, "auto-kv#") {
		t.Errorf("labels %q %q", eras[0].Label, eras[1].Label)
	}
}

// The histogram stays bounded whatever times the records carry.
func TestRecordTimesBounded(t *testing.T) {
	var r RecordTimes
	for i := range MaxMinutes + 10 {
		r.Add(time.Unix(int64(i)*60, 0), true, OneRecord(1, true))
	}
	if len(r.Minutes) != MaxMinutes || r.NotPlaced.Records != 10 || r.Records() != MaxMinutes+10 {
		t.Errorf("minutes %d, not placed %d", len(r.Minutes), r.NotPlaced.Records)
	}
}

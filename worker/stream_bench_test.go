package worker

import (
	"strconv"
	"testing"
)

// BenchmarkGenerateCumulativePerToken: a 10,000-token /generate answer
// through a gateway that drops sampling_params.stream_interval (smg
// re-serialises a SamplingParams without it), so SGLang sends one
// cumulative chunk per token: 10,000 chunks, the last one holding the whole
// text and all the ids. The chunks are built in a reused buffer inside the
// loop (the same cost before and after); what the accumulator keeps and
// allocates is what changes.
func BenchmarkGenerateCumulativePerToken(b *testing.B) {
	const n = 10000
	var text, ids, chunk []byte
	b.ReportAllocs()
	for b.Loop() {
		var a generateAccumulator
		text, ids = text[:0], ids[:0]
		for i := 1; i <= n; i++ {
			text = append(text, " tok"...)
			if i > 1 {
				ids = append(ids, ',')
			}
			ids = strconv.AppendInt(ids, int64(1000+i%5000), 10)
			chunk = append(chunk[:0], `{"text":"`...)
			chunk = append(chunk, text...)
			chunk = append(chunk, `","output_ids":[`...)
			chunk = append(chunk, ids...)
			chunk = append(chunk, `],"meta_info":{"id":"x","finish_reason":`...)
			if i == n {
				chunk = append(chunk, `{"type":"length","length":10000}`...)
			} else {
				chunk = append(chunk, "null"...)
			}
			chunk = append(chunk, `,"prompt_tokens":12,"completion_tokens":`...)
			chunk = strconv.AppendInt(chunk, int64(i), 10)
			chunk = append(chunk, `,"cached_tokens":0}}`...)
			if err := a.chunk(chunk); err != nil {
				b.Fatal(err)
			}
		}
		c, err := a.result()
		if err != nil || c.CompletionTokens != n || len(*c.Text) != 4*n {
			b.Fatalf("%v %d", err, c.CompletionTokens)
		}
	}
}

package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/synthwatch/synthwatch/sim"
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

// BenchmarkGenerateWireBytes: bytes on the wire for one long /generate
// answer through a gateway that drops stream_interval (sim's
// DropStreamInterval), over HTTP through a counting proxy: "stream" is the
// first request to a server, one cumulative chunk per token; "whole" is
// every later one, asked with "stream": false.
func BenchmarkGenerateWireBytes(b *testing.B) {
	for _, n := range []int{4000, 10000} {
		s := startSim(b, sim.Options{Speed: 5000, ShortMean: 3 * n, DropStreamInterval: true})
		tap, server := tapServer(b, s.URL())
		for _, whole := range []bool{false, true} {
			name := fmt.Sprintf("tokens=%d/stream", n)
			if whole {
				name = fmt.Sprintf("tokens=%d/whole", n)
			}
			b.Run(name, func(b *testing.B) {
				var wire, answer int64
				rid := 0
				for b.Loop() {
					rid++
					c := NewClient(server, "generate", "", 1)
					if whole {
						c.askWhole(server, n, n, 32)
					}
					_, before := tap.seen()
					comp, err := c.Complete(context.Background(), fmt.Sprintf("bench-%d", rid), Prompt{Text: json.RawMessage(`"q"`)}, n, nil)
					if err != nil || comp.CompletionTokens != n {
						b.Fatalf("%v %d", err, comp.CompletionTokens)
					}
					_, after := tap.seen()
					wire, answer = after[len(before)], int64(len(*comp.Text)+len(comp.OutputIDs))
				}
				b.ReportMetric(float64(wire), "wire_B/answer")
				b.ReportMetric(float64(answer), "answer_B")
			})
		}
	}
}

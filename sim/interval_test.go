package sim

import (
	"fmt"
	"testing"
)

// A /generate stream comes in chunks of the request's stream_interval
// (after token 1, every+1, 2*every+1, … and at the finish), of the
// server's default of one token without the key, and of one token when
// DropStreamInterval stands for the gateway that drops the key. Every
// chunk is cumulative and ends where its completion_tokens says.
func TestGenerateStreamInterval(t *testing.T) {
	cases := []struct {
		name string
		drop bool
		sp   string
		want int // chunks for 100 tokens
	}{
		{"interval 32", false, `,"stream_interval":32`, 5},             // 1, 33, 65, 97, 100
		{"no key: server default 1", false, ``, 100},                   // every token
		{"dropped by the gateway", true, `,"stream_interval":32`, 100}, // as smg does
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := start(t, Options{Speed: 100, DropStreamInterval: c.drop})
			body := fmt.Sprintf(`{"text":"hi","stream":true,"sampling_params":{"max_new_tokens":100%s}}`, c.sp)
			_, evs, done := stream(t, s.URL()+genPath, body)
			if !done || len(evs) != c.want {
				t.Fatalf("%d chunks (done %v), want %d", len(evs), done, c.want)
			}
			prev := ""
			for i, e := range evs {
				text := e["text"].(string)
				if len(text) <= len(prev) || text[:len(prev)] != prev {
					t.Fatalf("chunk %d does not extend the one before", i)
				}
				prev = text
				n := len(e["output_ids"].([]any))
				if float64(n) != e["meta_info"].(map[string]any)["completion_tokens"].(float64) {
					t.Fatalf("chunk %d: %d ids, meta %v", i, n, e["meta_info"])
				}
			}
			if c.want == 5 {
				for i, n := range []int{1, 33, 65, 97, 100} {
					if got := len(evs[i]["output_ids"].([]any)); got != n {
						t.Errorf("chunk %d holds %d tokens, want %d", i, got, n)
					}
				}
			}
		})
	}
}

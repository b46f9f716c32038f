package sim

import "encoding/json"

// streamEvery is how many tokens a /generate stream chunk holds (0: not a
// /generate stream, which keeps the sim's up-to-64 pieces). SGLang's
// scheduler takes the request's sampling_params.stream_interval, else the
// server's --stream-interval, 1 by default (sgl-project/sglang @ 5294b03c,
// python/sglang/srt/managers/scheduler_output_processor_mixin.py,
// stream_output_generation: `req.sampling_params.stream_interval or
// self.stream_interval`; server_args.py, ServerArgs.stream_interval = 1).
//
// DropStreamInterval copies the Shepherd Model Gateway in front: it
// re-serialises /generate through a typed SamplingParams that has no
// stream_interval field, so serde drops the key and the server streams
// every token (smg-project/smg @ cb001cff, crates/protocols/src/
// sampling_params.rs; crates/protocols/src/generate.rs keeps unknown keys
// only at the top level). Each chunk then holds the whole text and ids so
// far (cumulative by default: tokenizer_manager_components/
// output_processor.py @ 29ff63a5, _build_out_dict_str), so an answer of n
// tokens costs the sum of its n prefixes on the wire.
func (s *Server) streamEvery(req *request, chat bool) int {
	if chat || !req.Stream {
		return 0
	}
	k := 0
	if !s.opts.DropStreamInterval {
		_ = json.Unmarshal(req.Sampling["stream_interval"], &k)
	}
	return max(k, 1)
}

// chunkSizes splits n tokens into chunks. every > 1: SGLang emits when
// len(output_ids) % every == 1, so after token 1, every+1, 2*every+1, …,
// and at the finish; every == 1: each token; every == 0: up to 64 even
// pieces.
func chunkSizes(n, every int) []int {
	var sizes []int
	switch {
	case every <= 0:
		k := min(n, 64)
		for i := range k {
			sizes = append(sizes, n*(i+1)/k-n*i/k)
		}
	case every == 1:
		for range n {
			sizes = append(sizes, 1)
		}
	default:
		sizes = append(sizes, 1)
		for done := 1; done < n; done += every {
			sizes = append(sizes, min(every, n-done))
		}
	}
	return sizes
}

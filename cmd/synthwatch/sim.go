package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/sim"
)

func newSimCmd() *cobra.Command {
	var o sim.Options
	var f sim.Faults
	var listen, logPath, shape string
	cmd := &cobra.Command{
		Use:   "sim --listen ADDR [--log FILE]",
		Short: "Run an SGLang stand-in (for tests, benchmarks and the demo; no GPU needed)",
		Long: `sim answers like an SGLang server (/generate, /v1/chat/completions, /health,
/metrics, /get_server_info, ...) with a finite token rate and capacity, and writes
SGLang-style startup and scheduler lines to --log. Faults can be injected.
It keeps SGLang's request rules (unique live rids, abort by rid prefix once a
disconnect is noticed, strict /generate sampling_params, streaming); --flavor
vllm answers like vLLM instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if shape != "" {
				sh, ok := sim.ShapeByName(shape)
				if !ok {
					return fmt.Errorf("sim: --shape %q: not one of the family (sim/shapes.go)", shape)
				}
				applyShape(&o, sh.Opts, cmd.Flags().Changed)
				o.Load = true
			}
			if d := o.AnswerDist; d != "uniform" && d != "exp" && d != "lognormal" {
				return fmt.Errorf("sim: --answer-dist %q: want uniform, exp or lognormal", d)
			}
			if o.Flavor != "sglang" && o.Flavor != "vllm" {
				return fmt.Errorf("sim: --flavor %q: want sglang or vllm", o.Flavor)
			}
			var logw io.Writer = io.Discard
			if logPath != "" {
				lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					return fmt.Errorf("sim log: %w", err)
				}
				defer lf.Close()
				logw = lf
			}
			o.Log = logw
			s := sim.New(o)
			if err := s.Start(listen); err != nil {
				return err
			}
			s.SetFaults(f)
			fmt.Fprintf(cmd.OutOrStdout(), "sim listening on %s\n", s.URL())
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			<-ctx.Done()
			s.Close()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", parse.DefaultServerAddr, "address to listen on")
	fl.StringVar(&logPath, "log", "", "SGLang-style log file to append to")
	fl.StringVar(&o.Model, "model", "", "model path to report")
	fl.Float64Var(&o.Speed, "speed", 1, "time compression factor")
	fl.Float64Var(&o.Speed, "time-scale", 1, "the same as --speed: 60 runs an hour of the server's dynamics in a minute")
	fl.BoolVar(&o.Load, "load", false, "model SGLang's scheduler under load: KV pool, admission, batch-dependent decode, retraction")
	fl.BoolVar(&o.NoMetrics, "no-metrics", false, "serve no /metrics (SGLang without --enable-metrics): the scheduler's state only in the log")
	fl.IntVar(&o.MaxTotal, "max-total-tokens", 0, "KV pool in tokens (default 190000 with --load)")
	fl.Float64Var(&o.LongShare, "long-share", 0, "fraction of requests answering at LONG length (a mixed category)")
	fl.StringVar(&shape, "shape", "", "a server of the load family (implies --load; flags given beside it win): "+shapeNames())
	fl.IntVar(&o.ShortMean, "short-mean", 250, "mean answer tokens of a SHORT request")
	fl.IntVar(&o.LongMean, "long-mean", 3800, "mean answer tokens of a LONG request")
	fl.StringVar(&o.AnswerDist, "answer-dist", "uniform", "how answer lengths spread: uniform (0.6–1.4 × the mean), exp, lognormal")
	fl.DurationVar(&o.Cost.DecodeBase, "decode-base", sim.DefaultLoadCost.DecodeBase, "--load: the fixed time of a decode step")
	fl.DurationVar(&o.Cost.DecodePerReq, "decode-per-req", sim.DefaultLoadCost.DecodePerReq, "--load: a decode step's time per running request")
	fl.Float64Var(&o.Cost.DecodePerKV, "decode-per-kv-ns", sim.DefaultLoadCost.DecodePerKV, "--load: a decode step's nanoseconds per KV token held")
	fl.DurationVar(&o.Cost.PrefillBase, "prefill-base", sim.DefaultLoadCost.PrefillBase, "--load: the fixed time of a prefill batch")
	fl.DurationVar(&o.Cost.PrefillPerTok, "prefill-per-token", sim.DefaultLoadCost.PrefillPerTok, "--load: prefill time per prompt token")
	fl.IntVar(&o.Capacity, "capacity", 256, "max running requests (more queue)")
	fl.IntVar(&o.Capacity, "max-running-requests", 256, "the same as --capacity (SGLang's name)")
	fl.Float64Var(&o.TokPerSec, "tok-per-sec", 40, "decode tokens per second of one request")
	fl.StringVar(&o.Format, "format", "2026", "log format: 2026, v0.5, v0.4, v0.3, dp")
	fl.BoolVar(&o.Instant, "instant", false, "answer at once with tiny completions")
	fl.IntVar(&o.ContentBytes, "content-bytes", 0, "pad each completion to this many bytes")
	fl.Float64Var(&f.ErrorRate, "error-rate", 0, "fraction of requests answered 503")
	fl.Float64Var(&f.ResetRate, "reset-rate", 0, "fraction of connections reset")
	fl.Float64Var(&f.HangRate, "hang-rate", 0, "fraction of requests never answered")
	fl.StringVar(&f.StallMatch, "stall-match", "", "requests whose body contains this never answer")
	fl.Float64Var(&f.AbortRate, "abort-rate", 0, "fraction of requests answered 200 with finish_reason abort")
	fl.Float64Var(&f.StallMidStream, "stall-mid-stream", 0, "fraction of streams that stop sending after a few chunks")
	fl.Float64Var(&f.StreamErrorRate, "stream-error-rate", 0, "fraction of streams that end with an error event")
	fl.IntVar(&f.EndlessBytes, "endless-bytes", 0, "stream deltas of this many bytes for ever, never finishing (a broken server or proxy)")
	fl.StringVar(&o.Flavor, "flavor", "sglang", "server to copy: sglang or vllm")
	fl.BoolVar(&o.ReasoningContentAlias, "reasoning-content-alias", false, "vllm: send reasoning_content beside reasoning")
	fl.StringVar(&o.APIKey, "api-key", "", "require Authorization: Bearer KEY")
	fl.StringVar(&o.KVCacheDType, "kv-cache-dtype", "auto", "kv_cache_dtype to report (server_info, vllm:cache_config_info)")
	fl.StringVar(&o.ResolvedKVDType, "resolved-kv-dtype", "", `log "Using KV cache dtype: X" at startup (e.g. torch.float8_e4m3fn)`)
	fl.DurationVar(&o.DisconnectHold, "disconnect-hold", 4*time.Second, "how long a client's disconnect goes unnoticed (at speed 1)")
	fl.BoolVar(&o.IncrementalStreaming, "incremental-streaming-output", false, "/generate streams send deltas, not cumulative text and ids")
	fl.BoolVar(&o.StreamOutput2025, "stream-output", false, "as a 2025 SGLang with --stream-output: /generate streams cumulative text but delta output_ids")
	fl.BoolVar(&o.DropStreamInterval, "drop-stream-interval", false, "as behind the smg gateway: ignore /generate's sampling_params.stream_interval and stream one cumulative chunk per token")
	fl.BoolVar(&o.NoTokenizeMessages, "no-tokenize-messages", false, "/v1/tokenize takes only prompt (2025 builds)")
	return cmd
}

func shapeNames() string {
	var n []string
	for _, s := range sim.Shapes {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}

// applyShape takes the shape's load options for every flag not given.
func applyShape(o *sim.Options, sh sim.Options, given func(string) bool) {
	set := func(flag string, dst *int, v int) {
		if !given(flag) && v != 0 {
			*dst = v
		}
	}
	set("max-total-tokens", &o.MaxTotal, sh.MaxTotal)
	if !given("capacity") && !given("max-running-requests") && sh.Capacity != 0 {
		o.Capacity = sh.Capacity
	}
	set("short-mean", &o.ShortMean, sh.ShortMean)
	set("long-mean", &o.LongMean, sh.LongMean)
	if !given("answer-dist") && sh.AnswerDist != "" {
		o.AnswerDist = sh.AnswerDist
	}
	if !given("long-share") {
		o.LongShare = sh.LongShare
	}
	if sh.LongAbove != 0 {
		o.LongAbove = sh.LongAbove
	}
	if sh.Cost != (sim.LoadCost{}) && !given("decode-base") && !given("decode-per-req") && !given("decode-per-kv-ns") && !given("prefill-base") && !given("prefill-per-token") {
		o.Cost = sh.Cost
	}
}

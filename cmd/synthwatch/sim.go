package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/sim"
)

func newSimCmd() *cobra.Command {
	var o sim.Options
	var f sim.Faults
	var listen, logPath string
	cmd := &cobra.Command{
		Use:   "sim --listen ADDR [--log FILE]",
		Short: "Run an SGLang stand-in (for tests, benchmarks and the demo; no GPU needed)",
		Long: `sim answers like an SGLang server (/generate, /v1/chat/completions, /health,
/metrics, /get_server_info, ...) with a finite token rate and capacity, and writes
SGLang-style startup and scheduler lines to --log. Faults can be injected.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
	fl.StringVar(&listen, "listen", "127.0.0.1:30000", "address to listen on")
	fl.StringVar(&logPath, "log", "", "SGLang-style log file to append to")
	fl.StringVar(&o.Model, "model", "", "model path to report")
	fl.Float64Var(&o.Speed, "speed", 1, "time compression factor")
	fl.IntVar(&o.Capacity, "capacity", 256, "max running requests (more queue)")
	fl.Float64Var(&o.TokPerSec, "tok-per-sec", 40, "decode tokens per second of one request")
	fl.StringVar(&o.Format, "format", "2026", "log format: 2026, v0.5, v0.4, v0.3, dp")
	fl.BoolVar(&o.Instant, "instant", false, "answer at once with tiny completions")
	fl.IntVar(&o.ContentBytes, "content-bytes", 0, "pad each completion to this many bytes")
	fl.Float64Var(&f.ErrorRate, "error-rate", 0, "fraction of requests answered 503")
	fl.Float64Var(&f.ResetRate, "reset-rate", 0, "fraction of connections reset")
	fl.Float64Var(&f.HangRate, "hang-rate", 0, "fraction of requests never answered")
	return cmd
}

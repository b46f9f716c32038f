package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/worker"
)

func newWorkerCmd() *cobra.Command {
	var cfg worker.Config
	cmd := &cobra.Command{
		Use:   "worker --root DIR",
		Short: "Run the inference worker on the host (sends prompts, appends completions)",
		Long: `The worker sends every prompt of every category under ROOT/prepared to the
SGLang server and appends each completion to raw_responses.jsonl, exactly once
and as a whole line. It resumes by itself: ids already present are skipped and
a torn last line is repaired. Defaults come from ROOT/pipeline.toml; flags win.

SIGTERM or SIGINT stops issuing, waits up to --grace for requests in flight,
writes them and exits 0. The log goes to stdout, unbuffered, one line a write.

Exit codes: 0 every category done, or stopped by a signal; 1 the run failed
(the server refuses it, a write failed, a refused pipeline.toml); 5 it went
through every category and some failed (the log's last line names them).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.APIKeyFile != "" { // a flag's path is the shell's; the manifest's is the root's
				abs, err := filepath.Abs(cfg.APIKeyFile)
				if err != nil {
					return err
				}
				cfg.APIKeyFile = abs
			}
			if cfg.Server == "" { // a launch's, kept out of argv
				cfg.Server = os.Getenv(worker.ServerEnv)
			}
			os.Unsetenv(worker.ServerEnv)
			if cfg.PowerEvery <= 0 { // the flag's 0 is "never"; the Config's is the default
				cfg.PowerEvery = -1
			}
			cfg.Args = os.Args
			cfg.Version = buildVersion()
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			err := worker.Run(ctx, cfg, os.Stdout)
			if errors.Is(err, worker.ErrCategoriesFailed) { // the log said which
				return &exitError{exitCategoriesFailed, quietError{err}}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Root, "root", "", "pipeline root (holds prepared/, logs/, run/)")
	f.StringVar(&cfg.Server, "server", "", "server URL (else $"+worker.ServerEnv+", which keeps a password out of the command line; else pipeline.toml's, else "+worker.DefaultServer+")")
	f.StringVar(&cfg.API, "api", "", "chat or generate (default from pipeline.toml, else chat)")
	f.StringVar(&cfg.Model, "model", "", "model name sent with chat requests")
	f.StringArrayVar(&cfg.Only, "only", nil, "a category to run (repeat the flag; the order is kept)")
	f.IntVar(&cfg.Concurrency, "concurrency", 0, "requests in flight, fixed (overrides the class); default: an adaptive window that follows the server")
	f.IntVar(&cfg.MaxConcurrency, "max-concurrency", worker.DefaultMaxConcurrency, "the adaptive window's cap")
	f.IntVar(&cfg.MaxTokens, "max-tokens", 0, "max completion tokens (overrides the class)")
	f.IntVar(&cfg.MaxSamples, "max-samples", 0, "cap on records per category, resumed ones included")
	f.Int64Var(&cfg.TokenBudget, "token-budget", 0, "cap on completion tokens per category")
	f.DurationVar(&cfg.Grace, "grace", worker.DefaultGrace, "how long a stop waits for requests in flight")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", 0, "total limit per request (default none: answers are streamed and cut only after --idle-timeout of silence)")
	f.DurationVar(&cfg.IdleGap, "idle-timeout", worker.DefaultIdleGap, "retry a streamed answer that sends nothing for this long")
	f.StringVar(&cfg.APIKeyFile, "api-key-file", "", "file holding the server's API key (else $"+worker.APIKeyEnv+"); the key is never logged or stored")
	f.StringVar(&cfg.ServerLog, "server-log", "", "the server's log, for its KV cache dtype and, without /metrics, the adaptive window's gauges (default from pipeline.toml's servers, else ROOT/logs/sglang_inference.log)")
	f.IntVar(&cfg.MaxAttempts, "attempts", worker.DefaultAttempts, "attempts per prompt for retryable errors")
	f.StringVar(&cfg.Priority, "priority", "auto", "X-SMG-Priority for a shared gateway: auto (bulk when the server is a gateway), none, system, interactive, default or bulk")
	f.DurationVar(&cfg.PowerEvery, "power-every", worker.DefaultPowerEvery, "how often the GPUs' power (nvidia-smi) and the server's generation counter are read for the energy and wasted-token tally; 0 or less: never")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

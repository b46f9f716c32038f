package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// Config is what one worker run does. Zero values mean "from the manifest,
// else the default".
type Config struct {
	Root           string
	Server         string
	API            string
	Model          string
	Only           []string
	Concurrency    int // fixes the window of every class; 0: the class's, else adaptive
	MaxConcurrency int // the adaptive window's cap (0: DefaultMaxConcurrency)
	// AdaptEvery is how often the adaptive window is decided (0:
	// DefaultAdaptEvery); tests and benchmarks on a time-scaled sim shorten it.
	AdaptEvery     time.Duration
	MaxTokens      int
	MaxSamples     int
	TokenBudget    int64
	Grace          time.Duration
	RequestTimeout time.Duration // 0: scaled by max_tokens
	MaxAttempts    int
	Args           []string // the command line, for worker.json
	Version        string
	// APIKeyFile holds the server's API key; else SYNTHWATCH_API_KEY. The
	// key itself is kept out of argv, logs, runs.jsonl and worker.json.
	APIKeyFile string
	IdleGap    time.Duration // a streamed answer silent this long is retried (0: DefaultIdleGap)
	// ServerLog is the server's log (--server-log), read for the KV cache
	// dtype the scheduler resolved when the server info says "auto", and
	// for the adaptive window's gauges when /metrics is not served. Default:
	// the log pipeline.toml's servers list gives the server, else
	// <root>/logs/sglang_inference.log; a missing file is not an error.
	ServerLog string
	// Priority is the X-SMG-Priority each request carries (gateway.go):
	// "" or "auto" sends bulk when the server is a gateway, nothing to a
	// server; "none" never sends it; else one of system, interactive,
	// default, bulk.
	Priority string
	// PowerEvery is how often the GPUs' power and the server's generation
	// counter are read for the run's energy and wasted-token ledger
	// (meter.go); 0: DefaultPowerEvery, negative: never
	PowerEvery time.Duration
}

// Defaults when neither flags nor manifest say.
const (
	DefaultServer         = parse.DefaultServerURL
	DefaultAPI            = "chat"
	DefaultMaxConcurrency = 1024
	DefaultAdaptEvery     = 5 * time.Second
	DefaultMaxTokens      = 10240
	DefaultGrace          = 30 * time.Second
	DefaultPowerEvery     = 5 * time.Second
	DefaultAttempts       = 5
)

// Category is one category as this run will do it.
type Category struct {
	Name        string
	Class       string
	Dir         string
	Concurrency int  // the fixed window, or the adaptive window's cap
	Adaptive    bool // the window follows the server (window.go)
	MaxTokens   int
	Sampling    map[string]any
	MaxSamples  int
	TokenBudget int64
}

// obeyable refuses a manifest another user can change (untrusted, from
// parse.ReadTrusted) when this run would take from it where requests and
// the API key go: its server, servers (their logs) or api_key_file. Its
// categories and classes are still read. A flag given instead of the
// manifest's key leaves nothing to refuse.
func obeyable(m parse.Manifest, cfg Config, untrusted error) error {
	if untrusted == nil {
		return nil
	}
	var keys, flags []string
	if m.Server != "" && cfg.Server == "" {
		keys, flags = append(keys, "server"), append(flags, "--server")
	}
	if len(m.Servers) > 0 && cfg.ServerLog == "" { // a server's log path is read from them
		keys, flags = append(keys, "servers"), append(flags, "--server-log")
	}
	if m.APIKeyFile != "" && cfg.APIKeyFile == "" {
		keys, flags = append(keys, "api_key_file"), append(flags, "--api-key-file")
	}
	if len(keys) == 0 {
		return nil
	}
	var ue *parse.UntrustedError
	if errors.As(untrusted, &ue) {
		ue.Fix = "give " + strings.Join(flags, " ") + ", or " + ue.Fix
	}
	return fmt.Errorf("refusing pipeline.toml's %s (where requests and the key go): %w", strings.Join(keys, ", "), untrusted)
}

// Plan resolves the manifest (if any), the prepared/ folders and the flags
// into the ordered list of categories to run.
func Plan(cfg *Config) ([]Category, error) {
	var m parse.Manifest
	data, untrusted, err := parse.ReadTrusted(underRoot(cfg.Root, parse.ManifestPath))
	switch {
	case err == nil:
		if m, err = parse.ParseManifest(data); !parse.ManifestUsable(err) {
			return nil, err
		} // a fault in [capture], [cost] or [gate] leaves that section out: the views say it
		if err = obeyable(m, *cfg, untrusted); err != nil {
			return nil, err
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("read pipeline.toml: %w", err)
	}
	cfg.Server = first(cfg.Server, m.Server, DefaultServer)
	cfg.API = first(cfg.API, m.API, DefaultAPI)
	cfg.Model = first(cfg.Model, m.Model)
	cfg.APIKeyFile = first(cfg.APIKeyFile, m.APIKeyFile)
	if cfg.API != "chat" && cfg.API != "generate" {
		return nil, fmt.Errorf("--api must be chat or generate, not %q", cfg.API)
	}
	if cfg.ServerLog == "" {
		if cfg.ServerLog = serverLogOf(m.Servers, cfg.Server); !filepath.IsAbs(cfg.ServerLog) {
			cfg.ServerLog = underRoot(cfg.Root, cfg.ServerLog)
		}
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultAttempts
	}
	if cfg.AdaptEvery <= 0 {
		cfg.AdaptEvery = DefaultAdaptEvery
	}
	specs := m.Categories
	if len(specs) == 0 {
		dirs, err := filepath.Glob(filepath.Join(globEscape(underRoot(cfg.Root, parse.PreparedDir)), "*", parse.PromptsFile))
		if err != nil {
			return nil, err
		}
		sort.Strings(dirs)
		for _, p := range dirs {
			specs = append(specs, parse.CategorySpec{Name: filepath.Base(filepath.Dir(p)), Class: "SHORT"})
		}
	}
	if len(cfg.Only) > 0 { // --only also sets the order: restart puts one category first
		byName := map[string]parse.CategorySpec{}
		for _, s := range specs {
			byName[s.Name] = s
		}
		specs = specs[:0:0]
		for _, o := range cfg.Only {
			s, ok := byName[o]
			if !ok {
				return nil, fmt.Errorf("--only %s: no such category", o)
			}
			specs = append(specs, s)
			delete(byName, o)
		}
	}
	var out []Category
	for _, s := range specs {
		class := first(s.Class, "SHORT")
		cl := m.Classes[class]
		c := Category{
			Name: s.Name, Class: class, Dir: filepath.Join(underRoot(cfg.Root, parse.PreparedDir), s.Name),
			Concurrency: firstInt(cfg.Concurrency, cl.Concurrency),
			MaxTokens:   firstInt(cfg.MaxTokens, cl.MaxTokens, DefaultMaxTokens),
			Sampling:    cl.Sampling,
			MaxSamples:  firstInt(cfg.MaxSamples, s.MaxSamples),
			TokenBudget: s.TokenBudget,
		}
		if cfg.TokenBudget > 0 {
			c.TokenBudget = cfg.TokenBudget
		}
		if c.Concurrency == 0 {
			c.Concurrency, c.Adaptive = firstInt(cfg.MaxConcurrency, DefaultMaxConcurrency), true
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no categories under %s (no pipeline.toml and no prepared/*/prompts.jsonl)", cfg.Root)
	}
	return out, nil
}

// globEscape quotes the pattern characters of a literal path, so a root
// like /data/synth[fp8] is that directory and not a character class.
func globEscape(s string) string { return globEscaper.Replace(s) }

var globEscaper = strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)

// serverLogOf is the log of the server at url as the manifest's servers
// list names it (or the dashboard's default for its place in the list).
func serverLogOf(servers []parse.ServerEntry, url string) string {
	for i, e := range servers {
		if strings.TrimRight(e.URL, "/") == strings.TrimRight(url, "/") {
			return first(e.Log, parse.ServerLogFor(i, e.URL))
		}
	}
	return parse.ServerLogPath
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstInt(vals ...int) int {
	for _, v := range vals {
		if v > 0 {
			return v
		}
	}
	return 0
}

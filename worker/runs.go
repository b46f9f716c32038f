package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// configKeys are the server settings that change what a completion looks
// like. Two runs whose values differ made data that should not be mixed
// unnoticed (for example an FP8 KV cache in one of them).
var configKeys = []string{
	"model_path", "tokenizer_path", "served_model_name", "kv_cache_dtype", "quantization", "dtype",
	"tp_size", "dp_size", "ep_size", "context_length", "reasoning_parser", "speculative_algorithm",
	"attention_backend", "version", "weight_version",
}

// infoOnlyKeys are recorded for provenance but not hashed into the config
// key: they size the KV pool, they do not change a completion, and
// max_total_num_tokens moves with the free GPU memory at start, which
// would make every restart look like a new configuration.
var infoOnlyKeys = []string{
	"mem_fraction_static", "page_size", "max_total_num_tokens", "block_size", "gpu_memory_utilization", "enable_prefix_caching",
	"kv_cache_dtype_log_error",
	// they shape the scheduler, so the window's memory (remember.go) keys on them
	"max_running_requests", "chunked_prefill_size", "schedule_conservativeness", "schedule_policy",
}

// vllmCacheKeys are the vllm:cache_config_info labels kept; cache_dtype is
// stored as kv_cache_dtype, the name SGLang uses.
var vllmCacheKeys = []string{"cache_dtype", "block_size", "gpu_memory_utilization", "enable_prefix_caching", "calculate_kv_scales", "mamba_cache_dtype"}

// ConfigUnknown is the config key of a snapshot that could not be taken
// whole. It never counts as a configuration of its own.
const ConfigUnknown = parse.ConfigUnknown

// ServerSnapshot is what the server says about itself, kept in runs.jsonl
// (parse.RunLine, the schema the dashboard reads).
type ServerSnapshot = parse.ServerSnapshot

// describeServer asks the server what it is and keeps the settings that
// matter.
//
// SGLang: /server_info (2026 name), else /get_server_info, and /model_info,
// else /get_model_info. When kv_cache_dtype is "auto" (or absent) the pool
// may still be FP8 (from the checkpoint's quantisation config); the
// scheduler's last "Using KV cache dtype:" line in serverLog (if given and
// present) is then stored as kv_cache_dtype_resolved.
//
// vLLM (no server info endpoint): the labels of vllm:cache_config_info in
// /metrics, /version and /v1/models.
//
// A snapshot with any failed request gets config key "unknown", never a
// hash of what little answered.
func describeServer(ctx context.Context, c *Client, serverLog ...string) ServerSnapshot {
	info := map[string]any{}
	var errs []string
	si, err := c.GetJSON(ctx, "/server_info", "/get_server_info")
	if _, isVLLM := si["vllm_config"]; err == nil && !isVLLM {
		errs = describeSGLang(ctx, c, si, info, serverLog)
	} else {
		errs = describeVLLM(ctx, c, info)
		if err != nil && info["server"] != "vllm" { // neither SGLang nor vLLM answered
			errs = append([]string{fmt.Sprintf("server_info: %v", err)}, errs...)
		}
	}
	s := ServerSnapshot{Info: info, ConfigKey: ConfigUnknown}
	if len(errs) > 0 {
		s.Error = strings.Join(errs, "; ")
	} else if k := configKey(info); k != "" {
		s.ConfigKey = k
	} else {
		s.Error = "the server described no setting"
	}
	return s
}

// configKey hashes the settings of info that change completions; "" when
// there are none.
func configKey(info map[string]any) string {
	keyed := make(map[string]any, len(info))
	for k, v := range info {
		keyed[k] = v
	}
	for _, k := range infoOnlyKeys {
		delete(keyed, k)
	}
	if len(keyed) == 0 {
		return ""
	}
	return hashInfo(keyed)
}

// hashInfo is a short stable hash of a server description.
func hashInfo(m map[string]any) string {
	canon, _ := json.Marshal(m) // map keys are sorted: a stable key
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:6])
}

func describeSGLang(ctx context.Context, c *Client, si, info map[string]any, serverLog []string) []string {
	var errs []string
	for _, k := range configKeys {
		if v, ok := si[k]; ok && v != nil {
			info[k] = v
		}
	}
	for _, k := range infoOnlyKeys {
		if v, ok := si[k]; ok && v != nil {
			info[k] = v
		} else if v := internalState(si, k); v != nil { // scheduler info nested in newer builds
			info[k] = v
		}
	}
	if mi, err := c.GetJSON(ctx, "/model_info", "/get_model_info"); err == nil {
		for _, k := range []string{"model_path", "tokenizer_path", "weight_version"} {
			if v, ok := mi[k]; ok && v != nil {
				if _, have := info[k]; !have {
					info[k] = v
				}
			}
		}
	} else {
		errs = append(errs, fmt.Sprintf("model_info: %v", err))
	}
	if d, _ := info["kv_cache_dtype"].(string); (d == "" || d == "auto") && len(serverLog) > 0 && serverLog[0] != "" {
		resolved, err := lastKVCacheDtype(serverLog[0])
		if err != nil {
			// the log is a hint: a snapshot without it is still whole
			info["kv_cache_dtype_log_error"] = err.Error()
		} else if resolved != "" {
			info["kv_cache_dtype_resolved"] = resolved
		}
	}
	return errs
}

// internalState finds key in the first of si's internal_states.
func internalState(si map[string]any, key string) any {
	states, _ := si["internal_states"].([]any)
	if len(states) == 0 {
		return nil
	}
	m, _ := states[0].(map[string]any)
	return m[key]
}

// describeVLLM fills info from a vLLM server and says what failed. It sets
// info["server"] = "vllm" once /metrics shows vllm:cache_config_info.
func describeVLLM(ctx context.Context, c *Client, info map[string]any) []string {
	var errs []string
	text, err := c.getText(ctx, "/metrics")
	if err != nil {
		return []string{fmt.Sprintf("metrics: %v", err)}
	}
	labels, err := parse.MetricLabels(strings.NewReader(text), "vllm:cache_config_info")
	if err != nil {
		return []string{fmt.Sprintf("metrics: %v", err)}
	}
	if len(labels) == 0 {
		return []string{"metrics: no vllm:cache_config_info (not a vLLM server, or its stats are off)"}
	}
	info["server"] = "vllm"
	for _, k := range vllmCacheKeys {
		v, ok := labels[0][k]
		if !ok || v == "" || v == "None" {
			continue
		}
		if k == "cache_dtype" {
			k = "kv_cache_dtype"
		}
		info[k] = v
	}
	if v, err := c.GetJSON(ctx, "/version"); err == nil {
		if s, ok := v["version"]; ok && s != nil {
			info["version"] = s
		}
	} else {
		errs = append(errs, fmt.Sprintf("version: %v", err))
	}
	if m, err := c.GetJSON(ctx, "/v1/models"); err == nil {
		data, _ := m["data"].([]any)
		if len(data) > 0 {
			if d, ok := data[0].(map[string]any); ok {
				for from, to := range map[string]string{"id": "served_model_name", "root": "model_path", "max_model_len": "context_length"} {
					if v, ok := d[from]; ok && v != nil {
						info[to] = v
					}
				}
			}
		}
	} else {
		errs = append(errs, fmt.Sprintf("models: %v", err))
	}
	return errs
}

// appendRun appends one line to runs.jsonl after cutting a torn tail (a
// line torn by a crash would otherwise glue onto this one and hide it). It
// returns the bytes cut, for the caller to log.
func appendRun(dir string, l parse.RunLine) (cut int64, err error) {
	line, err := encodeLine(l)
	if err != nil {
		return 0, err
	}
	path := filepath.Join(dir, parse.RunsFile)
	cut, _, err = RepairTail(path)
	if err != nil {
		return 0, err
	}
	a, err := OpenAppender(path)
	if err != nil {
		return cut, err
	}
	if err := a.Append(line); err != nil {
		a.Close()
		return cut, err
	}
	return cut, a.Close()
}

// endRun appends the run's end line to the runs.jsonl of the category it
// started last, so the night report says how the run ended rather than
// guess it; cause is the stop signal or the error. A run that started no
// category wrote no start line either and ends without one.
func (w *Worker) endRun(end string, cause error) {
	if w.lastRunDir == "" || w.lock.Held() != nil { // a root another worker took is its to write
		return
	}
	l := parse.RunLine{Run: w.runID, PID: os.Getpid(), EndedAt: stamp(time.Now()), End: end}
	if cause != nil {
		l.Cause = cause.Error()
	}
	if _, err := appendRun(w.lastRunDir, l); err != nil {
		w.logf("runs.jsonl: the run's end line: %s", parse.SanitizeString(err.Error()))
	}
}

// runsStarted counts the runs this process started: a second run in the
// same second (a test, an embedding program) gets an id of its own.
var runsStarted atomic.Int64

// newRunID is "START-PID", and "-N" for the process's Nth run after its first.
func newRunID(now time.Time) string {
	id := fmt.Sprintf("%s-%d", now.UTC().Format("20060102T150405Z"), os.Getpid())
	if n := runsStarted.Add(1); n > 1 {
		id += fmt.Sprintf("-%d", n)
	}
	return id
}

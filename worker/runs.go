package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// configKeys are the server settings that change what a completion looks
// like. Two runs whose values differ made data that should not be mixed
// unnoticed (for example an FP8 KV cache in one of them).
var configKeys = []string{
	"model_path", "tokenizer_path", "served_model_name", "kv_cache_dtype", "quantization", "dtype",
	"tp_size", "dp_size", "ep_size", "context_length", "reasoning_parser", "speculative_algorithm",
	"attention_backend", "version", "weight_version",
}

// ServerSnapshot is what the server says about itself, kept in runs.jsonl.
type ServerSnapshot struct {
	Info      map[string]any `json:"info,omitempty"`
	ConfigKey string         `json:"config_key"`
	Error     string         `json:"error,omitempty"`
}

// describeServer reads /get_server_info (or /server_info) and
// /get_model_info (or /model_info) and keeps the settings that matter.
func describeServer(ctx context.Context, c *Client) ServerSnapshot {
	info := map[string]any{}
	var errs []string
	if si, err := c.GetJSON(ctx, "/get_server_info", "/server_info"); err == nil {
		for _, k := range configKeys {
			if v, ok := si[k]; ok && v != nil {
				info[k] = v
			}
		}
	} else {
		errs = append(errs, fmt.Sprintf("server_info: %v", err))
	}
	if mi, err := c.GetJSON(ctx, "/get_model_info", "/model_info"); err == nil {
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
	canon, _ := json.Marshal(info) // map keys are sorted: a stable key
	sum := sha256.Sum256(canon)
	s := ServerSnapshot{Info: info, ConfigKey: hex.EncodeToString(sum[:6])}
	if len(errs) > 0 {
		s.Error = fmt.Sprint(errs)
	}
	return s
}

// runLine is one line of <category>/runs.jsonl.
type runLine struct {
	Run       string         `json:"run"`
	PID       int            `json:"pid"`
	StartedAt string         `json:"started_at"`
	Version   string         `json:"version"`
	Server    string         `json:"server"`
	API       string         `json:"api"`
	Model     string         `json:"model,omitempty"`
	Snapshot  ServerSnapshot `json:"server_info"`
}

func appendRun(dir string, l runLine) error {
	line, err := encodeLine(l)
	if err != nil {
		return err
	}
	a, err := OpenAppender(filepath.Join(dir, "runs.jsonl"))
	if err != nil {
		return err
	}
	if err := a.Append(line); err != nil {
		a.Close()
		return err
	}
	return a.Close()
}

func newRunID(now time.Time) string {
	return fmt.Sprintf("%s-%d", now.UTC().Format("20060102T150405Z"), os.Getpid())
}

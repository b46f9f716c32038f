package counts

import (
	"strings"
	"testing"

	"github.com/synthwatch/synthwatch/remote"
)

func runsUpdate(lines ...string) remote.TailUpdate {
	var up remote.TailUpdate
	for _, l := range lines {
		up.Lines = append(up.Lines, remote.Line{Text: l})
	}
	return up
}

// A failed snapshot ("unknown", or an old worker's hash of an empty info)
// is not a server configuration of its own.
func TestFoldRunsIgnoresUnknownConfig(t *testing.T) {
	t.Parallel()
	c := &catState{}
	c.foldRuns(runsUpdate(
		`{"run":"a","server_info":{"info":{"kv_cache_dtype":"auto","model_path":"/m"},"config_key":"aaa"}}`,
		`{"run":"b","server_info":{"config_key":"unknown","error":"server_info: connection refused"}}`,
		`{"run":"c","server_info":{"config_key":"44136fa355b3","error":"[server_info: EOF]"}}`,
		`{"run":"d","server_info":{"info":{"kv_cache_dtype":"auto","model_path":"/m"},"config_key":"aaa"}}`,
	))
	if len(c.configs) != 1 {
		t.Fatalf("configs %v", c.configs)
	}
	c.foldRuns(runsUpdate(
		`{"run":"e","server_info":{"info":{"kv_cache_dtype":"auto","kv_cache_dtype_resolved":"float8_e4m3fn","model_path":"/m"},"config_key":"bbb"}}`,
	))
	if len(c.configs) != 2 || !strings.Contains(c.configDesc["bbb"], "kv_cache_dtype=auto(float8_e4m3fn)") || c.configDesc["aaa"] != "kv_cache_dtype=auto quantization=<nil> model=/m" {
		t.Errorf("configs %v %v", c.configs, c.configDesc)
	}
}

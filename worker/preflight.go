package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
)

// APIKeyEnv names the environment variable that may hold the API key.
const APIKeyEnv = "SYNTHWATCH_API_KEY"

// ServerEnv names the environment variable that may hold the server's URL
// when --server is not given: a launch passes it there, out of the command
// line every account can read (a URL may hold a password).
const ServerEnv = "SYNTHWATCH_SERVER"

// loadAPIKey reads the key from cfg.APIKeyFile (relative to the root), else
// from the environment. An unreadable or empty file is an error: running
// without the key would fail every request.
func loadAPIKey(cfg Config) (string, error) {
	if cfg.APIKeyFile == "" {
		key := strings.TrimSpace(os.Getenv(APIKeyEnv))
		if strings.IndexFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) >= 0 {
			return "", fmt.Errorf("api key: $%s must hold one key, in visible ASCII", APIKeyEnv)
		}
		return key, nil
	}
	path := cfg.APIKeyFile
	if !filepath.IsAbs(path) {
		path = filepath.Join(cfg.Root, path)
	}
	data, err := parse.ReadSecret(path) // the user's own, unreadable by others
	if err != nil {
		return "", fmt.Errorf("api key: %w", err)
	}
	key := strings.TrimSpace(string(data))
	if key == "" {
		return "", fmt.Errorf("api key: %s is empty", path)
	}
	for _, c := range key {
		if c < 0x21 || c > 0x7e { // an HTTP header holds one line of visible ASCII
			return "", fmt.Errorf("api key: %s must hold one key on one line, in visible ASCII", path)
		}
	}
	return key, nil
}

// preflight refuses, before any prompt is sent, a run that could only
// fail: sampling keys /generate would reject, or chat prompts for
// /generate on a server that cannot template them.
func (w *Worker) preflight(ctx context.Context) error {
	for _, c := range w.cats {
		if err := checkSampling(w.cfg.API, c.Sampling); err != nil {
			return fmt.Errorf("%s (class %s): %w", c.Name, c.Class, err)
		}
	}
	if w.cfg.API != "generate" || ctx.Err() != nil {
		return nil
	}
	_, terr := w.client.Tokenize(ctx, json.RawMessage(`[{"role":"user","content":"ping"}]`))
	if terr == nil {
		w.logf("Chat prompts for /generate are templated by the server (/v1/tokenize with messages)")
		return nil
	}
	for _, c := range w.cats {
		p, err := readPromptSet(filepath.Join(c.Dir, parse.PromptsFile))
		n := p.messagesOnly
		if err != nil || n == 0 {
			continue // a missing file fails that category on its own
		}
		return fmt.Errorf("--api generate: %s has %d prompts with only \"messages\", and the server at %s cannot apply its chat template to them (/v1/tokenize: %v); give those prompts \"text\" or \"input_ids\" (apply the template offline), or use --api chat",
			c.Name, n, w.cfg.Server, terr)
	}
	return nil
}

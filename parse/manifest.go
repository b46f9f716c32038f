package parse

import (
	"fmt"

	"github.com/BurntSushi/toml"
)

// Manifest is <root>/pipeline.toml: the server, the request classes and the
// categories in the order the worker runs them.
type Manifest struct {
	Server     string           `toml:"server" json:"server,omitempty"`
	API        string           `toml:"api" json:"api,omitempty"` // chat | generate
	Model      string           `toml:"model" json:"model,omitempty"`
	Classes    map[string]Class `toml:"classes" json:"classes,omitempty"`
	Categories []CategorySpec   `toml:"categories" json:"categories,omitempty"`
}

// Class is a kind of request: how many at once, how long, how sampled.
type Class struct {
	Concurrency int            `toml:"concurrency" json:"concurrency,omitempty"`
	MaxTokens   int            `toml:"max_tokens" json:"max_tokens,omitempty"`
	Sampling    map[string]any `toml:"sampling" json:"sampling,omitempty"` // temperature, top_p, ...
}

// CategorySpec is one dataset category of the manifest.
type CategorySpec struct {
	Name        string `toml:"name" json:"name"`
	Class       string `toml:"class" json:"class,omitempty"`
	MaxSamples  int    `toml:"max_samples" json:"max_samples,omitempty"`
	TokenBudget int64  `toml:"token_budget" json:"token_budget,omitempty"` // completion tokens
}

// ParseManifest reads pipeline.toml. Unknown keys are an error, so a typo
// does not silently fall back to a default.
func ParseManifest(data []byte) (Manifest, error) {
	var m Manifest
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return m, fmt.Errorf("pipeline.toml: %w", err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return m, fmt.Errorf("pipeline.toml: unknown key %q", und[0].String())
	}
	if m.API != "" && m.API != "chat" && m.API != "generate" {
		return m, fmt.Errorf("pipeline.toml: api must be chat or generate, not %q", m.API)
	}
	seen := map[string]bool{}
	for i, c := range m.Categories {
		if c.Name == "" {
			return m, fmt.Errorf("pipeline.toml: category %d has no name", i+1)
		}
		if seen[c.Name] {
			return m, fmt.Errorf("pipeline.toml: category %q listed twice", c.Name)
		}
		seen[c.Name] = true
		if c.Class != "" && m.Classes != nil {
			if _, ok := m.Classes[c.Class]; !ok {
				return m, fmt.Errorf("pipeline.toml: category %q uses unknown class %q", c.Name, c.Class)
			}
		}
	}
	return m, nil
}

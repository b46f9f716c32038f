package parse

import (
	"cmp"
	"fmt"
	"strings"
)

// Manifest is <root>/pipeline.toml: the server, the request classes and the
// categories in the order the worker runs them.
type Manifest struct {
	Server string `toml:"server" json:"server,omitempty"`
	// Servers are every server the dashboard watches on the host (the
	// worker still talks to Server: one server, or SGLang's router)
	Servers []ServerEntry `toml:"servers" json:"servers,omitempty"`
	API     string        `toml:"api" json:"api,omitempty"` // chat | generate
	Model   string        `toml:"model" json:"model,omitempty"`
	// APIKeyFile names a file whose content (trimmed) is the server's API
	// key, sent with every request. A relative path is relative to the
	// root; "~" is not expanded (write the full path).
	APIKeyFile string           `toml:"api_key_file" json:"api_key_file,omitempty"`
	Classes    map[string]Class `toml:"classes" json:"classes,omitempty"`
	Categories []CategorySpec   `toml:"categories" json:"categories,omitempty"`
	// Capture is what the next stage keeps a token: a forecast of its
	// disk in every view when hidden_size is set
	Capture Capture `toml:"capture" json:"capture,omitempty"`
	// Cost prices the GPUs' energy in every view (energy.go)
	Cost CostRate `toml:"cost" json:"cost,omitzero"`
	// Gate is the training-readiness gate's rules (gatejudge.go)
	Gate GateRules `toml:"gate" json:"gate,omitempty"`
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
	m, md, viewErr, err := decodeManifest(string(data))
	if err != nil {
		return m, fmt.Errorf(ManifestPath+": %w", err)
	}
	for _, k := range md.Undecoded() {
		if !viewSection[k[0]] {
			return m, fmt.Errorf(ManifestPath+": unknown key %q", k.String())
		}
		viewErr = cmp.Or(viewErr, fmt.Errorf("unknown key %q", k.String()))
		m.clearSection(k[0])
	}
	for _, sec := range []string{"capture", "cost", "gate"} {
		if err := m.checkSection(sec); err != nil {
			viewErr = cmp.Or(viewErr, err)
			m.clearSection(sec)
		}
	}
	if m.API != "" && m.API != "chat" && m.API != "generate" {
		return m, fmt.Errorf(ManifestPath+": api must be chat or generate, not %q", m.API)
	}
	seen := map[string]bool{}
	for i, c := range m.Categories {
		if c.Name == "" {
			return m, fmt.Errorf(ManifestPath+": category %d has no name", i+1)
		}
		if err := CheckCategoryName(c.Name); err != nil {
			return m, fmt.Errorf(ManifestPath+": category %d: %w", i+1, err)
		}
		if seen[c.Name] {
			return m, fmt.Errorf(ManifestPath+": category %q listed twice", c.Name)
		}
		seen[c.Name] = true
		if c.Class != "" && m.Classes != nil {
			if _, ok := m.Classes[c.Class]; !ok {
				return m, fmt.Errorf(ManifestPath+": category %q uses unknown class %q", c.Name, c.Class)
			}
		}
	}
	if viewErr != nil {
		return m, &ViewSectionError{Err: viewErr}
	}
	return m, nil
}

// CheckCategoryName refuses a name that is not one plain directory under
// prepared/: empty, ".", or holding "/", a backslash, ".." or a NUL. Such a name
// would read or write outside the root.
func CheckCategoryName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty category name")
	case name == "." || name == "..":
		return fmt.Errorf("category name %q is not a directory name", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("category name %q holds '/', '\\' or a NUL: it must be one directory under prepared/", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("category name %q holds \"..\"", name)
	}
	return nil
}

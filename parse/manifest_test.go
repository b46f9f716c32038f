package parse

import (
	"strings"
	"testing"
)

func TestManifestRefusesPathNames(t *testing.T) {
	for _, name := range []string{`../../outside-root`, `a/b`, `/abs`, `a\\b`, `..`, `.`, `x..y`, "nul\\u0000x", ``} {
		data := "[[categories]]\nname = \"" + name + "\"\n"
		_, err := ParseManifest([]byte(data))
		if err == nil {
			t.Errorf("name %q accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), "pipeline.toml: category 1") {
			t.Errorf("name %q: unclear error %v", name, err)
		}
	}
	for _, name := range []string{"A", "a,b", "B11 with spaces", "x.y", ".hidden", "été"} {
		if _, err := ParseManifest([]byte("[[categories]]\nname = \"" + name + "\"\n")); err != nil {
			t.Errorf("name %q refused: %v", name, err)
		}
	}
}

func TestManifestAPIKeyFile(t *testing.T) {
	m, err := ParseManifest([]byte("api_key_file = \"secrets/sglang.key\"\n"))
	if err != nil || m.APIKeyFile != "secrets/sglang.key" {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := ParseManifest([]byte("api_key_file = 3\n")); err == nil {
		t.Error("non-string api_key_file accepted")
	}
}

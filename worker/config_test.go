package worker

import (
	"os"
	"path/filepath"
	"testing"
)

// A root with glob characters is that directory: its sibling "synthf"
// (which "synth[fp8]" matches as a pattern) is not read.
func TestPlanEscapesRoot(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, root := range []string{"synth[fp8]", "synth*", "synth?x", `synth\x`} {
		t.Run(root, func(t *testing.T) {
			dir := filepath.Join(base, root)
			for _, c := range []struct{ root, cat string }{{root, "A"}, {"synthf", "OTHER"}, {"synthxx", "OTHER2"}} {
				p := filepath.Join(base, c.root, "prepared", c.cat)
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(p, "prompts.jsonl"), []byte(`{"id":1}`+"\n"), 0o644)
			}
			cats, err := Plan(&Config{Root: dir})
			if err != nil {
				t.Fatal(err)
			}
			if len(cats) != 1 || cats[0].Name != "A" || cats[0].Dir != filepath.Join(dir, "prepared", "A") {
				t.Errorf("root %q: %+v", root, cats)
			}
		})
	}
}

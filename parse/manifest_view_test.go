package parse

import (
	"errors"
	"strings"
	"testing"
)

// A fault in a section only the views read ([capture], [cost], [gate])
// leaves that section out and the rest of pipeline.toml stands: a typo in
// the gate neither stops the worker nor loses the classes, caps and
// budgets. Before, min_pass_rate = 95 made class LONG SHORT and the token
// budget vanish, and the worker refused to start.
func TestViewSectionFaultLeavesTheRest(t *testing.T) {
	t.Parallel()
	const core = "[classes.LONG]\nconcurrency = 4\n[[categories]]\nname = \"B2\"\nclass = \"LONG\"\ntoken_budget = 10000000\n"
	for _, tc := range []struct {
		name, view, says string
		gone             func(Manifest) bool
	}{
		{"a rate out of range", "[gate]\nmin_pass_rate = 95\n", "min_pass_rate", func(m Manifest) bool { return m.Gate == GateRules{} }},
		{"a value of the wrong type", "[gate]\nmin_pass_rate = \"90%\"\nmax_length = 4096\n", `"gate.min_pass_rate"`, func(m Manifest) bool { return m.Gate == GateRules{} }},
		{"an unknown key", "[cost]\nper_kwh = 0.3\nper_kwhh = 0.2\n", `"cost.per_kwhh"`, func(m Manifest) bool { return m.Cost == CostRate{} }},
		{"an infinite price", "[cost]\nper_kwh = inf\n", "cost", func(m Manifest) bool { return m.Cost == CostRate{} }},
		{"a negative capture", "[capture]\nhidden_size = -1\n", "[capture]", func(m Manifest) bool { return m.Capture == Capture{} }},
	} {
		m, err := ParseManifest([]byte(core + tc.view))
		var ve *ViewSectionError
		if !errors.As(err, &ve) || !ManifestUsable(err) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "the rest of the file stands") {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(m.Categories) != 1 || m.Categories[0].Class != "LONG" || m.Categories[0].TokenBudget != 10000000 || m.Classes["LONG"].Concurrency != 4 || !tc.gone(m) {
			t.Errorf("%s: the rest did not stand, or the section did: %+v", tc.name, m)
		}
	}
	// a good view section beside a bad one stands
	m, err := ParseManifest([]byte(core + "[cost]\nper_kwh = 0.3\n[gate]\nmin_pass_rate = \"x\"\n"))
	if !ManifestUsable(err) || err == nil || m.Cost.PerKWh != 0.3 {
		t.Errorf("a good [cost] beside a bad [gate]: %v %+v", err, m.Cost)
	}
	// faults elsewhere stay fatal, with the decoder's words
	for _, bad := range []string{core + "[[categories]]\nname = \"B3\"\nmax_samples = \"x\"\n", core + "[gate\n", core + "serverr = \"x\"\n"} {
		if _, err := ParseManifest([]byte(bad)); err == nil || ManifestUsable(err) {
			t.Errorf("%q: %v, want a fatal error", bad, err)
		}
	}
}

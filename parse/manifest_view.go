package parse

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/BurntSushi/toml"
)

// viewSection are the sections only the views read: a fault in one leaves
// it out (ViewSectionError) and the rest of the file stands.
var viewSection = map[string]bool{"capture": true, "cost": true, "gate": true}

// ViewSectionError is a fault in [capture], [cost] or [gate], which only
// the views read: that section is left out and the manifest returned
// stands, so a typo there neither stops the worker nor loses the classes,
// caps and budgets (every view says it, as it says a manifest error).
type ViewSectionError struct {
	Err  error
	Path string // the file as the reader names it ("": pipeline.toml)
}

func (e *ViewSectionError) Error() string {
	return cmp.Or(e.Path, ManifestPath) + ": " + e.Err.Error() + " (that section is left out; the rest of the file stands)"
}

func (e *ViewSectionError) Unwrap() error { return e.Err }

// ManifestUsable says whether ParseManifest's manifest stands: no error,
// or only a view section left out (ViewSectionError), which every view
// says and nothing else minds.
func ManifestUsable(err error) bool {
	var ve *ViewSectionError
	return err == nil || errors.As(err, &ve)
}

// clearSection leaves out a view section that was wrong.
func (m *Manifest) clearSection(sec string) {
	switch sec {
	case "capture":
		m.Capture = Capture{}
	case "cost":
		m.Cost = CostRate{}
	case "gate":
		m.Gate = GateRules{}
	}
}

// checkSection says what is wrong with a view section.
func (m Manifest) checkSection(sec string) error {
	switch sec {
	case "capture":
		if c := m.Capture; c.HiddenSize < 0 || c.Layers < 0 || c.DtypeBytes < 0 {
			return fmt.Errorf("[capture] hidden_size, layers and dtype_bytes are counts, not negative")
		}
	case "cost":
		return m.Cost.Check()
	case "gate":
		return m.Gate.check()
	}
	return nil
}

// decodeManifest decodes pipeline.toml. Where the whole file does not
// decode but its TOML is sound, the fault is a value of the wrong type:
// when it is in a view section, that section is left out (viewErr) and
// the rest is decoded without it; a fault elsewhere is err, as before.
func decodeManifest(data string) (m Manifest, md toml.MetaData, viewErr, err error) {
	md, err = toml.Decode(data, &m)
	if err == nil {
		return m, md, nil, nil
	}
	var raw map[string]any
	if _, rerr := toml.Decode(data, &raw); rerr != nil {
		return m, md, nil, err // not TOML: the decoder's own words, with its line
	}
	views := map[string]any{}
	for sec := range viewSection {
		if v, ok := raw[sec]; ok {
			views[sec] = v
			delete(raw, sec)
		}
	}
	rest, ok := reencode(raw)
	if !ok {
		return Manifest{}, md, nil, err
	}
	var core Manifest
	cmd, cerr := toml.Decode(rest, &core)
	if cerr != nil {
		return Manifest{}, md, nil, err // the fault is not in a view section
	}
	for sec, v := range views {
		one, ok := reencode(map[string]any{sec: v})
		var x Manifest
		smd, serr := toml.Decode(one, &x)
		if und := smd.Undecoded(); serr == nil && len(und) > 0 {
			serr = fmt.Errorf("unknown key %q", und[0].String())
		}
		if !ok || serr != nil {
			why := err // the decoder's words, with the line, when they name the section's key
			if !strings.Contains(err.Error(), `"`+sec+`.`) {
				why = fmt.Errorf("[%s]: %w", sec, cmp.Or(serr, err))
			}
			viewErr = cmp.Or(viewErr, why)
			continue
		}
		switch sec { // the undecoded keys of a good section are the view's own fault, below
		case "capture":
			core.Capture = x.Capture
		case "cost":
			core.Cost = x.Cost
		case "gate":
			core.Gate = x.Gate
		}
	}
	return core, cmd, viewErr, nil
}

// reencode is a decoded TOML table written out again.
func reencode(v map[string]any) (string, bool) {
	var b bytes.Buffer
	if toml.NewEncoder(&b).Encode(v) != nil {
		return "", false
	}
	return b.String(), true
}

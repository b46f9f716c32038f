package counts

import (
	"errors"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
)

// WarnManifest says why the last poll could not use the manifest.
func (k *Set) WarnManifest(s *snapshot.Snapshot) {
	var untrusted *parse.UntrustedError
	var view *parse.ViewSectionError
	if errors.As(k.manErr, &untrusted) || errors.As(k.manErr, &view) { // read, and used but for that part
		s.Warn(snapshot.WarnManifest, k.manErr.Error())
	} else if k.manErr != nil {
		t := strings.Replace(k.manErr.Error(), ": "+parse.ManifestPath+": ", ": ", 1) // the parser names the file too
		s.Warn(snapshot.WarnManifest, "cannot use the manifest "+t+" (categories found from prepared/*/)")
	}
}

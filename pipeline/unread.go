package pipeline

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline/snapshot"
	"github.com/synthwatch/synthwatch/remote"
)

// warnFiles says which of the job's own files the last poll could not read.
func (w *Watcher) warnFiles(s *snapshot.Snapshot) {
	var untrusted *parse.UntrustedError
	var view *parse.ViewSectionError
	if errors.As(w.cnt.manErr, &untrusted) || errors.As(w.cnt.manErr, &view) { // read, and used but for that part
		s.Warn(snapshot.WarnManifest, w.cnt.manErr.Error())
	} else if w.cnt.manErr != nil {
		t := strings.Replace(w.cnt.manErr.Error(), ": "+parse.ManifestPath+": ", ": ", 1) // the parser names the file too
		s.Warn(snapshot.WarnManifest, "cannot use the manifest "+t+" (categories found from prepared/*/)")
	}
	if err := w.live.jsonErr; err != nil && !errors.Is(err, fs.ErrNotExist) && remote.IsFileError(err) {
		s.Warn(snapshot.WarnUnreadable, "cannot read "+remote.FileErrText(w.layout().WorkerJSON(), err))
	}
}

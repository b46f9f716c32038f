package pipeline

import (
	"errors"
	"io/fs"
	"strings"

	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/remote"
)

// Warning kinds of the files a poll could not read.
const (
	// WarnManifest: pipeline.toml is there but could not be read or parsed
	// (EACCES, a FIFO, a directory, bad TOML), or another account can change
	// it and its servers are refused (manifesttrust.go). Every view shows
	// it, status exits 1 on it, and the categories are still found.
	WarnManifest WarningKind = "manifest"
	// WarnUnreadable: a file the poll reads is there but is no readable
	// regular file (a FIFO at run/worker.json): named, never read.
	WarnUnreadable WarningKind = "unreadable"
)

// ManifestError is the snapshot's manifest warning ("" when none): the
// one test every view (header, status, fleet) asks.
func ManifestError(s Snapshot) string {
	for _, a := range s.Alerts {
		if a.Kind == WarnManifest {
			return a.Text
		}
	}
	return ""
}

// warnFiles says which of the job's own files the last poll could not read.
func (w *Watcher) warnFiles(s *Snapshot) {
	var untrusted *parse.UntrustedError
	if errors.As(w.cnt.manErr, &untrusted) { // read, but not for where the probes go
		s.Warn(WarnManifest, w.cnt.manErr.Error())
	} else if w.cnt.manErr != nil {
		t := strings.Replace(w.cnt.manErr.Error(), ": "+parse.ManifestPath+": ", ": ", 1) // the parser names the file too
		s.Warn(WarnManifest, "cannot use the manifest "+t+" (categories found from prepared/*/)")
	}
	if err := w.live.jsonErr; err != nil && !errors.Is(err, fs.ErrNotExist) && remote.IsFileError(err) {
		s.Warn(WarnUnreadable, "cannot read "+remote.FileErrText(w.layout().WorkerJSON(), err))
	}
}

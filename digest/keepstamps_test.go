package digest_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/parse"
)

// The stamps the host agent keeps of the records it sums (KeepStamps)
// are the ones a report's digest replays: the digest after them reads
// none of those records again and says what a digest of every record
// says; records appended after the keep are read on from where it ends.
func TestStampsKeptBesideTheDigestAreTheDigests(t *testing.T) {
	n := newKeptNight(t)
	keep := filepath.Join(t.TempDir(), "keep")
	cats, err := os.ReadDir(filepath.Join(n.root, parse.PreparedDir))
	if err != nil {
		t.Fatal(err)
	}
	var raws []string
	var size int64
	for _, c := range cats {
		p := n.raw(c.Name())
		if fi, err := os.Stat(p); err == nil {
			raws, size = append(raws, p), size+fi.Size()
		}
	}
	if len(raws) < 2 {
		t.Fatalf("the night has %d records files", len(raws))
	}
	if read := digest.KeepStamps(raws, keep, n.loc); read != size {
		t.Fatalf("KeepStamps read %d bytes of the records, want all %d", read, size)
	}
	if read := digest.KeepStamps(raws, keep, n.loc); read != 0 {
		t.Fatalf("KeepStamps again read %d bytes, want none: they were kept", read)
	}
	want, _ := n.digestJSON(t, "")
	got, read := n.digestJSON(t, keep)
	if got != want {
		t.Fatalf("the digest on the agent's kept stamps differs:\n%s", firstDiff(got, want))
	}
	if read.Kept != size {
		t.Fatalf("the digest replayed %d bytes of records, want every one kept: %d", read.Kept, size)
	}

	f, err := os.OpenFile(raws[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := n.now.Add(-10 * time.Minute).Format("2006-01-02T15:04:05.000000")
	f.WriteString(`{"id": "after-the-keep", "finished_at": "` + at + `", "completion_tokens": 50, "reasoning_content": "r", "content": "x", "finish_reason": "stop"}` + "\n")
	f.Close()
	want, _ = n.digestJSON(t, "")
	got, read = n.digestJSON(t, keep)
	if got != want {
		t.Fatalf("records appended after the keep: the digest differs:\n%s", firstDiff(got, want))
	}
	if read.Kept != size {
		t.Fatalf("records appended after the keep: %d bytes replayed, want the %d kept", read.Kept, size)
	}
	if digest.KeepStamps(raws, "", n.loc) != 0 {
		t.Fatal("KeepStamps with no folder read records: it has nowhere to keep them")
	}
}

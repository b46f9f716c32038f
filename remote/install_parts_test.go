package remote

import "testing"

// The parts of a copy: OpenSSH, whose sessions are 10 by default, gets
// what its window needs and its limit allows; another server (Dropbear's
// 24 KB window) as many as help; a small copy goes whole.
func TestPartsForTheServer(t *testing.T) {
	for _, c := range []struct {
		size    int
		version string
		want    int
	}{
		{14 << 20, "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13", openSSHParts},
		{14 << 20, "SSH-2.0-dropbear_2022.83", installParts},
		{14 << 20, "", installParts},
		{3 * installPartMin, "SSH-2.0-OpenSSH_9.6", 3},
		{installPartMin, "SSH-2.0-dropbear_2022.83", 1},
	} {
		if got := partsFor(c.size, c.version); got != c.want {
			t.Errorf("partsFor(%d, %q) = %d, want %d", c.size, c.version, got, c.want)
		}
	}
}

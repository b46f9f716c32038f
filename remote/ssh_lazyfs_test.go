package remote

import (
	"errors"
	"testing"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// The SFTP session opens on its first use. When that first use lands on a
// link that just died, the failure is the link's, not word that the host
// has no SFTP server: that session is not taken for one, and the drop's
// reason is not "the host has no SFTP server" (found by review: 10 of 10
// sessions so taken, 1 drop in 10 so named).
func TestLazySFTPOnADeadLinkIsNoRefusal(t *testing.T) {
	s := sshdtest.Start(t)
	for range 5 {
		h := dial(t, opts(t, s))
		sess, err := h.session()
		if err != nil {
			t.Fatal(err)
		}
		sess.link.close()
		<-sess.dead
		_, err = sess.fs()
		if err == nil || errors.Is(err, errNoSFTP) {
			t.Fatalf("SFTP asked on a dead link: %v, want the link's error", err)
		}
		if sess.noSFTP() {
			t.Fatal("a session whose link died is taken for a host without SFTP")
		}
		h.Close()
	}
}

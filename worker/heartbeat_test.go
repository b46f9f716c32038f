package worker

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/parse"
)

// First-use review m9: with every request hung the log said nothing for ten
// minutes. After HeartbeatAfter without an answer the worker says what it
// waits on, again every HeartbeatAfter, in a line the dashboard does not
// take for progress.
func TestHeartbeatWhileEveryRequestHangs(t *testing.T) {
	defer func(d time.Duration) { HeartbeatAfter = d }(HeartbeatAfter)
	HeartbeatAfter = 300 * time.Millisecond
	ts := streamServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server notices the client's close
		<-r.Context().Done()        // a wedged server: no byte, ever
	})
	root := promptsRoot(t, 3)
	ctx, cancel := context.WithCancel(context.Background())
	var log syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Root: root, Server: ts.URL, Concurrency: 3, IdleGap: time.Hour, Grace: 200 * time.Millisecond}, &log)
	}()
	beat := regexp.MustCompile(`(?m)^waiting: 3 requests in flight, oldest (\d+(\.\d+)?[a-z]+)+$`)
	deadline := time.Now().Add(30 * time.Second)
	for len(beat.FindAllString(log.String(), -1)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two heartbeat lines in 30 s:\n%s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.HasPrefix(l, "waiting:") {
			if k := parse.ParseWorkerLine(l).Kind; k != parse.WOther {
				t.Fatalf("%q reads as %s", l, k)
			}
		}
	}
}

package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// BenchmarkFirstInstall: a first contact with a host that has no agent,
// at 50, 150 and 300 ms RTT through the loopback proxy (a delay only, no
// bandwidth cap): from the first poll (answered by the launcher: none here) to
// the agent installed, and the bytes that crossed the link meanwhile
// (the launcher's answer and the gzip'd copy's), then the first poll of the
// installed agent. The build is this test binary. SW_BENCH_SERVER=dropbear
// runs it over Dropbear (a 24 KB window a channel) instead of OpenSSH.
func BenchmarkFirstInstall(b *testing.B) {
	start := sshdtest.Start
	if os.Getenv("SW_BENCH_SERVER") == "dropbear" {
		start = sshdtest.StartDropbear
	}
	var opts []sshdtest.Option
	if cfg := os.Getenv("SW_BENCH_SSHD"); cfg != "" { // "MaxSessions 10": OpenSSH's default, where the test server allows 100
		opts = append(opts, sshdtest.WithConfig(cfg))
	}
	for _, rtt := range []time.Duration{50 * time.Millisecond, 150 * time.Millisecond, 300 * time.Millisecond} {
		b.Run(fmt.Sprintf("rtt=%dms", rtt.Milliseconds()), func(b *testing.B) {
			s := start(b, opts...)
			if s.Home() == "" {
				b.Skip("needs the server's own home (root and unshare)")
			}
			px, h := benchHost(b, s)
			px.SetDelay(rtt / 2)
			var secs, agentSecs, wire, size float64
			n := 0
			for b.Loop() {
				os.RemoveAll(agentDir(s.Home()))
				ag := NewAgent(h)
				ag.UseBinary("/nonexistent/synthwatch")
				ag.AutoInstall(true)
				w0, start := h.Wire(), time.Now()
				// none there: the launcher says so (the fallback reads that poll) and the copy starts
				if _, err := ag.Run(context.Background(), loadBatch()); !errors.Is(err, ErrNoAgent) {
					b.Fatal(err)
				}
				res, err, _ := ag.WaitInstall(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				secs += time.Since(start).Seconds()
				w1 := h.Wire()
				wire += float64(w1.Sent + w1.Received - w0.Sent - w0.Received)
				size = float64(res.Size)
				t0 := time.Now()
				if _, err := ag.Run(context.Background(), loadBatch()); err != nil {
					b.Fatal(err)
				}
				agentSecs += time.Since(t0).Seconds()
				ag.Close()
				n++
			}
			b.ReportMetric(secs/float64(n), "s/install")
			b.ReportMetric(wire/float64(n)/1e6, "MB/install")
			b.ReportMetric(size/1e6, "MB-agent")
			b.ReportMetric(agentSecs/float64(n), "s/first-agent-poll")
		})
	}
}

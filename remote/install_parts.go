package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"
)

// installParts is how many channels an agent's copy may take at once. A
// channel moves one window of data a round trip, and the window is the
// server's: Dropbear's is 24 KB (its -W), so one channel carried a 14.7 MB
// copy in 182 s at 300 ms, 24 of them in 9.9 s (OpenSSH's is 2 MB: 24 save
// a third at 300 ms). A server refuses channels past its limit (OpenSSH's
// MaxSessions, 10 a connection): a refused part waits for a channel that
// finished, so the copy takes what the server allows.
const installParts = 24

// openSSHParts are the parts at once on OpenSSH: its MaxSessions is 10 by
// default, and a poll and the launcher hold channels of their own; a part
// past the limit costs a refused open and a wave more (BenchmarkFirstInstall
// with SW_BENCH_SSHD="MaxSessions 10": 2.46 s at 300 ms with 24 allowed to
// 100 sessions, 4.39 s against 10, 2.5 s with 8). Its 2 MB window needs
// no more.
const openSSHParts = 8

// partsFor is how many parts a copy of size bytes goes in to a server
// that calls itself version ("" unknown).
func partsFor(size int, version string) int {
	most := installParts
	if strings.Contains(version, "OpenSSH") {
		most = openSSHParts
	}
	return min(most, (size+installPartMin-1)/installPartMin)
}

// versioner is a host that knows its server's identification (SSH).
type versioner interface{ ServerVersion() string }

// installPartMin is the least a part holds: a smaller copy goes whole, in
// one exec, and pays no join.
const installPartMin = 512 << 10

// sendAgent runs install.sh (args) with wire, the copy as it crosses the
// link: whole on one exec's stdin, or in parts on channels at once and
// then joined on the host. A part the host refused (its exit) is the
// answer, as a whole copy's exit would be; the parts already there are
// removed.
func sendAgent(ctx context.Context, ie InputExecer, args []string, wire []byte, sent *atomic.Int64) (ExecResult, error) {
	version := ""
	if v, ok := ie.(versioner); ok {
		version = v.ServerVersion()
	}
	n := partsFor(len(wire), version)
	if n <= 1 {
		return ie.ExecInput(ctx, counted(wire, sent), args...)
	}
	var tb [8]byte
	_, _ = rand.Read(tb[:])
	tag := hex.EncodeToString(tb[:])
	with := func(mode string, i ...int) []string {
		out := append(slices.Clip(args), mode, tag)
		for _, v := range i {
			out = append(out, strconv.Itoa(v))
		}
		return out
	}
	size := (len(wire) + n - 1) / n
	res, errs := make([]ExecResult, n), make([]error, n)
	send := func(i int) {
		part := wire[i*size : min(len(wire), (i+1)*size)]
		res[i], errs[i] = ie.ExecInput(ctx, counted(part, sent), with("part", i, len(part))...)
	}
	todo := make(chan int, n)
	for i := range n {
		todo <- i
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case i := <-todo:
					if send(i); refused(errs[i]) {
						todo <- i // no byte of it was read: a channel that finishes takes it
						return
					}
				default:
					return
				}
			}
		})
	}
	wg.Wait()
	for len(todo) > 0 { // refused as the others ended: one at a time, while sessions free up
		i := <-todo
		for try := 0; ; try++ {
			if send(i); !refused(errs[i]) || try == refusedTries || ctx.Err() != nil {
				break
			}
			time.Sleep(refusedWait)
		}
	}
	failed := errors.Join(errs...)
	if i := slices.IndexFunc(res, func(r ExecResult) bool { return r.ExitCode != 0 }); failed != nil || i >= 0 {
		if ctx.Err() == nil { // not when quitting: a later join removes them after a day
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_, _ = ie.ExecInput(cctx, nil, with("clean", 0)...)
		}
		if i >= 0 { // the host's word (a loose folder, a full disk) before a link's
			return res[i], nil
		}
		return ExecResult{}, failed
	}
	return ie.ExecInput(ctx, nil, with("join", n)...)
}

// refusedTries and refusedWait: a part the server refused a channel when
// no other was sending waits for one of the session's own (a poll's) to
// end: up to 20 tries 250 ms apart.
const (
	refusedTries = 20
	refusedWait  = 250 * time.Millisecond
)

// refused says the server refused the channel (past its sessions' limit).
func refused(err error) bool {
	var oc *ssh.OpenChannelError
	return errors.As(err, &oc)
}

// counted reads b, adding what it read to sent when sent is not nil.
func counted(b []byte, sent *atomic.Int64) io.Reader {
	if sent == nil {
		return bytes.NewReader(b)
	}
	return &countingReader{r: bytes.NewReader(b), n: sent}
}

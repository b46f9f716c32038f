// Package faultproxy is a loopback TCP proxy for tests and benchmarks that
// can forward, black-hole (keep sockets open, drop bytes), reset, or slow the
// link: the faults of a night on a laptop, without network namespaces.
package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Mode is what the proxy does with traffic.
type Mode int32

const (
	Forward   Mode = iota
	BlackHole      // accept and hold connections, deliver nothing
)

// Proxy listens on 127.0.0.1 and forwards to Target.
type Proxy struct {
	Target string
	ln     net.Listener
	mode   atomic.Int32
	delay  atomic.Int64 // added one-way latency per chunk, in ns
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed chan struct{}
	// Bytes counts what crossed the proxy in both directions.
	Bytes atomic.Int64
	// Turns counts round trips over every connection, by what each side
	// could have heard rather than by time (see flights): a test reads it
	// before and after a call.
	Turns atomic.Int64
}

// flights counts one connection's round trips. A flight is what the client
// sends before it is handed anything new; it is a round trip once the
// server sends after receiving it. So a flight that gets no answer (an SSH
// window adjust) joins the next one instead of counting, while one that
// does (a keepalive) counts. Sends less than the added round trip apart
// (twice SetDelay) cannot have heard each other's answers: over a delay,
// concurrent requests count once however the scheduler orders them; with
// none, a fast answer between them may count them apart.
type flights struct {
	mu    sync.Mutex
	id    int64 // the current flight
	heard bool  // the client was handed bytes since it last sent
	open  bool  // flight id is unanswered
	sent  bool  // and some of it reached the server
}

// clientSent is a chunk read from the client; it returns its flight.
func (f *flights) clientSent() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.heard {
		f.heard = false
		if !f.open {
			f.id, f.open, f.sent = f.id+1, true, false
		}
	}
	return f.id
}

// reached is a chunk of flight id handed to the server.
func (f *flights) reached(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open && id == f.id {
		f.sent = true
	}
}

// serverSent is a chunk read from the server: it answers the open flight
// if that reached the server.
func (f *flights) serverSent() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	answered := f.open && f.sent
	if answered {
		f.open = false
	}
	return answered
}

// handed is a chunk handed to the client.
func (f *flights) handed() {
	f.mu.Lock()
	f.heard = true
	f.mu.Unlock()
}

// Start listens on a free loopback port.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Target: target, ln: ln, conns: map[net.Conn]struct{}{}, closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetMode switches between forwarding and black-holing.
func (p *Proxy) SetMode(m Mode) { p.mode.Store(int32(m)) }

// SetDelay adds latency to every chunk, each way.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Reset closes every connection with a TCP RST.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.Close()
		delete(p.conns, c)
	}
}

// Close stops the proxy and drops every connection.
func (p *Proxy) Close() {
	close(p.closed)
	p.ln.Close()
	p.Reset()
	p.wg.Wait()
}

// Idle waits until no connection through the proxy is open, at most d,
// and says whether it got there: a run's last chunks, delayed past its
// end, are counted in Bytes before the next run's first.
func (p *Proxy) Idle(d time.Duration) bool {
	for end := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		p.mu.Lock()
		n := len(p.conns)
		p.mu.Unlock()
		if n == 0 {
			return true
		}
		if time.Now().After(end) {
			return false
		}
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.track(c, true) // open from now on, for Idle: the target may answer before the dial returns
		up, err := net.Dial("tcp", p.Target)
		if err != nil {
			p.track(c, false)
			c.Close()
			continue
		}
		p.track(up, true)
		f := &flights{heard: true} // the client's first flight counts
		p.wg.Add(2)
		go p.pipe(c, up, f, false)
		go p.pipe(up, c, f, true)
	}
}

// pipe copies src to dst; toServer: src is the client.
func (p *Proxy) pipe(dst, src net.Conn, f *flights, toServer bool) {
	defer p.wg.Done()
	type chunk struct {
		data   []byte
		at     time.Time // when it may be delivered
		flight int64     // the client's flight it belongs to (toServer)
	}
	// Reading and delivering are apart, so latency delays each chunk from
	// its own arrival: a delay, not a throughput cap.
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				c := chunk{data: append([]byte(nil), buf[:n]...), at: time.Now().Add(time.Duration(p.delay.Load()))}
				if toServer {
					c.flight = f.clientSent()
				} else if f.serverSent() {
					p.Turns.Add(1)
				}
				q <- c
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		dst.Close()
		src.Close()
		p.track(dst, false)
		p.track(src, false)
		for range q { // let the reader finish
		}
	}()
	for c := range q {
		if d := time.Until(c.at); d > 0 {
			select {
			case <-time.After(d):
			case <-p.closed:
				return
			}
		}
		if Mode(p.mode.Load()) == BlackHole {
			continue // the bytes vanish; the socket stays open
		}
		if toServer {
			f.reached(c.flight)
		} else {
			f.handed() // before the write: a reply cannot come before it
		}
		// counted as written: a chunk whose delay ends after the proxy
		// closed its connection (the client gone) never crossed
		n, err := dst.Write(c.data)
		p.Bytes.Add(int64(n))
		if err != nil {
			return
		}
	}
}

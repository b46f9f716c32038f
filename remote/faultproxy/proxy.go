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
		up, err := net.Dial("tcp", p.Target)
		if err != nil {
			c.Close()
			continue
		}
		p.track(c, true)
		p.track(up, true)
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	type chunk struct {
		data []byte
		at   time.Time // when it may be delivered
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
				q <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(time.Duration(p.delay.Load()))}
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
		p.Bytes.Add(int64(len(c.data)))
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

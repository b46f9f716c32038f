package faultproxy

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// Turns counts what waited on an answer, however the sends were cut:
// requests sent together count once, and a send nothing answers (as an SSH
// window adjust) joins the next request instead of counting on its own.
func TestTurnsCountsRoundTrips(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // answers each line that ends in "?"
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if strings.HasSuffix(l, "?\n") {
				c.Write([]byte("ok\n"))
			}
		}
	}()
	p, err := Start(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetDelay(20 * time.Millisecond) // sends within 40 ms hear nothing between them
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	ask := func(lines ...string) {
		for _, l := range lines {
			if _, err := c.Write([]byte(l + "\n")); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range lines {
			if strings.HasSuffix(l, "?") {
				if _, err := r.ReadString('\n'); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for _, step := range []struct {
		lines []string
		want  int64
	}{
		{[]string{"a?"}, 1},
		{[]string{"b?"}, 1},
		{[]string{"c?", "d?", "e?"}, 1}, // together: one round trip
		{[]string{"adjust"}, 0},         // unanswered: it joins the next
		{[]string{"f?"}, 1},
		{[]string{"g?", "h"}, 1},
	} {
		before := p.Turns.Load()
		ask(step.lines...)
		if got := p.Turns.Load() - before; got != step.want {
			t.Errorf("%q: %d round trips, want %d", step.lines, got, step.want)
		}
	}
}

// A chunk the server sent that the delay holds past the client's end is
// counted when it is written, in the run it belongs to once Idle says the
// connection is gone, and not at all when it could not be written.
func TestIdleCountsARunsLastChunks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	sent := make(chan struct{})
	go func() { // the server: 1,000 bytes as soon as a client comes, then waits
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write([]byte(strings.Repeat("x", 1000)))
		close(sent)
		c.Read(make([]byte, 1))
	}()
	p, err := Start(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.SetDelay(200 * time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	<-sent
	if p.Idle(20 * time.Millisecond) {
		t.Fatal("idle with a connection open")
	}
	c.Close() // the client ends before the server's bytes reach it
	if !p.Idle(5 * time.Second) {
		t.Fatal("a closed connection still open after 5 s")
	}
	if got := p.Bytes.Load(); got > 1000 {
		t.Fatalf("%d bytes counted, more than crossed", got)
	}
	after := p.Bytes.Load()
	time.Sleep(300 * time.Millisecond) // past the delay: nothing more comes in late
	if got := p.Bytes.Load(); got != after {
		t.Fatalf("%d bytes counted after Idle, %d at it", got, after)
	}
}

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

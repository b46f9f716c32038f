package remote

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synthwatch/synthwatch/remote/sshdtest"
)

// countAccepts counts the connections its listener is given; silent
// counts those the dialler closed without a byte (a pre-dial dropped
// unused).
type countAccepts struct {
	ln              net.Listener
	accepts, silent atomic.Int32
}

// listenCounting listens on addr; serve (nil: read until the dialler
// closes) takes each connection.
func listenCounting(t *testing.T, addr string, serve func(c *countAccepts, conn net.Conn)) *countAccepts {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := &countAccepts{ln: ln}
	t.Cleanup(func() { ln.Close() })
	if serve == nil {
		serve = func(c *countAccepts, conn net.Conn) {
			defer conn.Close()
			var b [1]byte
			if n, _ := conn.Read(b[:]); n == 0 {
				c.silent.Add(1)
			}
		}
	}
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepts.Add(1)
			go serve(c, conn)
		}
	}()
	return c
}

// forwardTo serves a connection by copying it to and from target.
func forwardTo(target string) func(*countAccepts, net.Conn) {
	return func(_ *countAccepts, conn net.Conn) {
		up, err := net.Dial("tcp", target)
		if err != nil {
			conn.Close()
			return
		}
		go func() { defer up.Close(); copyAll(up, conn) }()
		defer conn.Close()
		copyAll(conn, up)
	}
}

func copyAll(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// The connection to the address typed goes out beside ssh -G, and is the
// one the link runs on: the host sees one connection, not two.
func TestPreDialIsTheLinksConnection(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	c := listenCounting(t, "127.0.0.1:0", forwardTo(s.Addr()))
	port := c.ln.Addr().(*net.TCPAddr).Port
	kh := filepath.Join(t.TempDir(), "known_hosts") // the host's key, pinned at the proxy's port
	b, err := os.ReadFile(s.KnownHosts)
	must(t, err)
	writeFile(t, kh, strings.ReplaceAll(string(b), strconv.Itoa(s.Port), strconv.Itoa(port)))
	o := opts(t, s)
	o.Opts[0] = "UserKnownHostsFile=" + kh
	o.Target = s.User + "@127.0.0.1:" + strconv.Itoa(port)
	o.ConfigFile = filepath.Join(t.TempDir(), "config")
	writeFile(t, o.ConfigFile, "Host *\n  ServerAliveInterval 15\n")
	if p := startPreDial(t.Context(), o); p == nil {
		t.Fatal("no pre-dial for an IP and port typed")
	} else {
		p.drop()
		for deadline := time.Now().Add(10 * time.Second); c.accepts.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // counted before the link's
		}
	}
	before := c.accepts.Load()
	h := dial(t, o)
	if r, err := h.Exec(t.Context(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec over the pre-dialled link: %v %q", err, r.Stdout)
	}
	time.Sleep(200 * time.Millisecond) // a second connection, had there been one, is in by now
	if n := c.accepts.Load() - before; n != 1 {
		t.Fatalf("the host got %d connections, want 1", n)
	}
}

// A config that sends the typed address elsewhere (a HostName of its own)
// gets no pre-dial: the typed address is never knocked on for nothing.
func TestNoPreDialWhenTheConfigGoesElsewhere(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	decoy := listenCounting(t, net.JoinHostPort("127.0.0.3", strconv.Itoa(s.Port)), nil)
	o := opts(t, s)
	o.Target = s.User + "@127.0.0.3:" + strconv.Itoa(s.Port)
	o.ConfigFile = filepath.Join(t.TempDir(), "config")
	writeFile(t, o.ConfigFile, "Host 127.0.0.3\n  HostName 127.0.0.1\n")
	h := dial(t, o)
	if r, err := h.Exec(t.Context(), "echo", "ok"); err != nil || string(r.Stdout) != "ok\n" {
		t.Fatalf("exec: %v %q", err, r.Stdout)
	}
	time.Sleep(200 * time.Millisecond) // a stray connection, had there been one, is in by now
	if a := decoy.accepts.Load(); a != 0 {
		t.Fatalf("the typed address got %d connections, want 0", a)
	}
}

// A jump or a proxy named in the flags or in any config file ssh reads
// (included ones too), or a Port or HostName that may apply to the address
// typed, means no pre-dial: the typed address may be one the laptop must
// not knock on, or one the link will not use.
func TestPreDialNotWhenAProxyIsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	writeFile(t, plain, "Host gpu\n  HostName 10.1.2.3\n#  ProxyCommand nc %h %p (a comment)\n")
	jump := filepath.Join(dir, "jump")
	writeFile(t, jump, "Host *\n  ProxyJump bastion\n")
	inc := filepath.Join(dir, "inc")
	writeFile(t, inc, "Include "+filepath.Join(dir, "j*")+"\n")
	rel := filepath.Join(dir, "rel")
	writeFile(t, rel, "Include jump\n") // relative to ~/.ssh
	home := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	writeFile(t, filepath.Join(home, ".ssh", "jump"), "ProxyCommand nc %h %p\n")
	spaced := filepath.Join(dir, "my hosts")
	must(t, os.MkdirAll(spaced, 0o700))
	writeFile(t, filepath.Join(spaced, "jump"), "Host *\n  ProxyJump bastion\n")
	eq := filepath.Join(dir, "eq")
	writeFile(t, eq, "Include = "+jump+"\nInclude="+plain+"\n")
	envInc := filepath.Join(dir, "env")
	writeFile(t, envInc, "Include ${SSH_CONF_DIR}/jump\n") // a name this does not expand
	quoted := filepath.Join(dir, "quoted")
	writeFile(t, quoted, "Include \""+filepath.Join(spaced, "j*")+"\"\n") // ssh reads a quoted name with a space as one
	port := filepath.Join(dir, "port")
	writeFile(t, port, "Host gpu\n  HostName 10.1.2.3\nHost 127.0.0.1\n  Port 2222\n")
	wild := filepath.Join(dir, "wild")
	writeFile(t, wild, "Host 127.0.0.* *.lab\n  HostName gpu.lab\n")
	global := filepath.Join(dir, "global")
	writeFile(t, global, "Port 2222\nHost gpu\n  User root\n")
	match := filepath.Join(dir, "match")
	writeFile(t, match, "Match user root\n  HostName gpu.lab\n")
	incPort := filepath.Join(dir, "incport")
	writeFile(t, incPort, "Host gpu\n  User root\nInclude "+port+"\n")
	negated := filepath.Join(dir, "negated")
	writeFile(t, negated, "Host * !127.0.0.1\n  Port 2222\n")
	for _, c := range []struct {
		name string
		o    Options
		want bool
	}{
		{"plain config", Options{Target: "root@127.0.0.1", ConfigFile: plain, Home: home}, true},
		{"an alias", Options{Target: "gpu", ConfigFile: plain, Home: home}, false},
		{"ProxyJump", Options{Target: "root@127.0.0.1", ConfigFile: jump, Home: home}, false},
		{"included", Options{Target: "root@127.0.0.1", ConfigFile: inc, Home: home}, false},
		{"included from ~/.ssh", Options{Target: "root@127.0.0.1", ConfigFile: rel, Home: home}, false},
		{"Include = NAME", Options{Target: "root@127.0.0.1", ConfigFile: eq, Home: home}, false},
		{"Include ${VAR}", Options{Target: "root@127.0.0.1", ConfigFile: envInc, Home: home}, false},
		{"included by a quoted name with a space", Options{Target: "root@127.0.0.1", ConfigFile: quoted, Home: home}, false},
		{"-J", Options{Target: "root@127.0.0.1", ConfigFile: plain, Home: home, Jump: "bastion"}, false},
		{"-o ProxyCommand", Options{Target: "root@127.0.0.1", ConfigFile: plain, Home: home, Opts: []string{"ProxyCommand=nc %h %p"}}, false},
		{"a Port for the address", Options{Target: "root@127.0.0.1", ConfigFile: port, Home: home}, false},
		{"a HostName for a pattern of it", Options{Target: "root@127.0.0.1", ConfigFile: wild, Home: home}, false},
		{"a Port for every host", Options{Target: "root@127.0.0.1", ConfigFile: global, Home: home}, false},
		{"a HostName in a Match block", Options{Target: "root@127.0.0.1", ConfigFile: match, Home: home}, false},
		{"a Port for the address, included", Options{Target: "root@127.0.0.1", ConfigFile: incPort, Home: home}, false},
		{"a Port for another address", Options{Target: "root@127.0.0.2", ConfigFile: port, Home: home}, true},
		{"a Port for all but the address", Options{Target: "root@127.0.0.1", ConfigFile: negated, Home: home}, true},
		{"-o Port", Options{Target: "root@127.0.0.1", ConfigFile: plain, Home: home, Opts: []string{"Port=2222"}}, false},
		{"-o HostName", Options{Target: "root@127.0.0.1", ConfigFile: plain, Home: home, Opts: []string{"HostName 10.0.0.1"}}, false},
	} {
		p := startPreDial(t.Context(), c.o)
		if (p != nil) != c.want {
			t.Errorf("%s: pre-dial %v, want %v", c.name, p != nil, c.want)
		}
		p.drop()
	}
}

// Host patterns match as OpenSSH's match_pattern does, on the name and
// the pattern as written (checked against ssh -G -F, OpenSSH 9.2): '?' is
// one byte, case counts, a negation rules the block out.
func TestHostPatternsMatchAsSSHDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pats []string
		host string
		want bool
	}{
		{[]string{"*"}, "10.0.0.1", true},
		{[]string{"10.0.0.?"}, "10.0.0.1", true},
		{[]string{"10.0.0.?"}, "10.0.0.12", false},
		{[]string{"10.0.0.1?"}, "10.0.0.1", false},
		{[]string{"*", "!10.0.0.1?"}, "10.0.0.1", true},
		{[]string{"*", "!10.0.0.*"}, "10.0.0.1", false},
		{[]string{"*", "!FD00::1"}, "fd00::1", true},
		{[]string{"FD00::1"}, "FD00::1", true},
		{[]string{"fd00::1"}, "FD00::1", false},
		{[]string{"FD00::1"}, "fd00::1", false},
		{[]string{"10.*.1"}, "10.0.0.1", true},
		{[]string{"gpu,10.0.0.1"}, "10.0.0.1", false},
		{nil, "10.0.0.1", false},
	} {
		if got := hostMatches(c.pats, c.host); got != c.want {
			t.Errorf("Host %v for %s: %v, want %v", c.pats, c.host, got, c.want)
		}
	}
}

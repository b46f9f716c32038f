package remote

import (
	"context"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// preDial is the TCP connect to the target as typed (an IP address: the
// usual `synthwatch root@10.1.230.174`), started beside `ssh -G`. ssh -G
// costs a process and its libraries (16 ms of a status here); the connect
// costs a round trip; the one hides in the other. The resolved config
// decides: a first hop to the same address takes the connection, anything
// else closes it unused. A config that can send the link elsewhere
// (ProxyJump, ProxyCommand, or a Port or HostName that may apply to the
// address typed, in the files ssh reads or the flags) gets no pre-dial: a
// host reached through a jump is never knocked on directly, and a port
// the config moves is not knocked on for nothing (a connect closed
// without a byte is what a host's fail2ban may count).
type preDial struct {
	addr  string
	done  chan struct{}
	conn  net.Conn
	err   error
	mu    sync.Mutex
	taken bool
	// matched: a config file ssh reads has a Match block, which the Go
	// parser does not apply: no handshake on its config (speculate.go)
	matched bool
}

// preDialLimit bounds a pre-dial nobody waits for (its answer is dropped).
const preDialLimit = 30 * time.Second

func startPreDial(ctx context.Context, o Options) *preDial {
	_, host, port, err := splitTarget(o.Target)
	var matched bool
	if err != nil || net.ParseIP(host) == nil || o.Jump != "" || mayGoElsewhere(o, host, &matched) {
		return nil
	}
	if o.Port > 0 && port > 0 && o.Port != port {
		return nil // Resolve refuses two ports
	}
	if o.Port > 0 {
		port = o.Port
	}
	if port == 0 {
		port = 22
	}
	p := &preDial{addr: net.JoinHostPort(host, strconv.Itoa(port)), done: make(chan struct{}), matched: matched}
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(ctx, preDialLimit) // the dial's end ends it too
		defer cancel()
		var d net.Dialer
		p.conn, p.err = d.DialContext(ctx, "tcp", p.addr)
	}()
	// the connect's syscall before ssh -G's fork: a dashboard runs on one
	// P (GOMAXPROCS 1), where the new goroutine would wait for the fork
	runtime.Gosched()
	return p
}

// take is the pre-dialled connection when addr is its address, waited for
// within ctx; nil when there is none to take (the caller dials, and gets
// the dial's own error if it fails again).
func (p *preDial) take(ctx context.Context, addr string) net.Conn {
	if p == nil || addr != p.addr {
		return nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || p.taken {
		return nil
	}
	p.taken = true
	return p.conn
}

// drop closes the connection if nobody took it, when it is made.
func (p *preDial) drop() {
	if p == nil {
		return
	}
	go func() {
		<-p.done
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.conn != nil && !p.taken {
			p.taken = true
			p.conn.Close()
		}
	}()
}

// mayGoElsewhere says whether the flags or the config files ssh reads (the
// -F file or ~/.ssh/config, /etc/ssh/ssh_config, and the files they
// include) name a ProxyJump or a ProxyCommand anywhere, or a Port or
// HostName where it may apply to host: before the first Host, in a Host
// block that matches it, or in any Match block. Read as words, not
// applied: a doubt means no pre-dial.
func mayGoElsewhere(o Options, host string, matched *bool) bool {
	for _, kv := range o.Opts {
		if proxyWord(kv) || movesAddr(configArgs(kv)) {
			return true
		}
	}
	home := o.Home
	if home == "" {
		home = loginHome() // ssh reads the passwd entry's ~/.ssh, not $HOME's
	}
	cfg := o.ConfigFile
	if cfg == "" {
		cfg = filepath.Join(home, ".ssh", "config")
	}
	sc := configScan{host: host, home: home, matched: matched}
	return sc.file(cfg, filepath.Join(home, ".ssh"), 0) || sc.file("/etc/ssh/ssh_config", "/etc/ssh", 0)
}

// loginHome is the user's home as ssh finds it: the passwd entry's, else
// $HOME.
func loginHome() string {
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		return u.HomeDir
	}
	home, _ := os.UserHomeDir()
	return home
}

// configScan reads config files for mayGoElsewhere.
type configScan struct {
	host, home string
	matched    *bool // set on a Match block
}

// file scans one file; each file starts outside any block, as ssh reads
// it (an included file's lines before its first Host apply where the
// Include stands: taken to apply, a doubt).
func (sc configScan) file(path, dir string, depth int) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false // no file: nothing in it sends the link elsewhere
	}
	applies := true
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "#") {
			continue // Debian's ssh_config shows a ProxyCommand in a comment
		}
		if proxyWord(line) {
			return true
		}
		f := configArgs(line)
		if len(f) == 0 {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "host":
			applies = hostMatches(f[1:], sc.host)
		case "match":
			applies = true // its criteria are not evaluated here
			if sc.matched != nil {
				*sc.matched = true
			}
		case "include":
			if sc.include(f[1:], dir, depth) {
				return true
			}
		default:
			if applies && movesAddr(f) {
				return true
			}
		}
	}
	return false
}

func (sc configScan) include(pats []string, dir string, depth int) bool {
	if depth > 2 {
		return true // deeper than ssh goes in practice: assume the worst
	}
	for _, pat := range pats {
		if strings.ContainsAny(pat, "$%") {
			return true // a name ssh may expand and this does not: assume the worst
		}
		if strings.HasPrefix(pat, "~/") {
			pat = filepath.Join(sc.home, pat[2:])
		} else if !filepath.IsAbs(pat) {
			pat = filepath.Join(dir, pat)
		}
		m, _ := filepath.Glob(pat)
		for _, inc := range m {
			if sc.file(inc, dir, depth+1) {
				return true
			}
		}
	}
	return false
}

// hostMatches applies a Host line's patterns to host as ssh does: to the
// name as typed, case and all (ssh -G -F: "Host fd00::1" is not FD00::1's);
// a negated match rules the block out.
func hostMatches(pats []string, host string) bool {
	found := false
	for _, p := range pats {
		neg := strings.HasPrefix(p, "!")
		if !sshMatch(strings.TrimPrefix(p, "!"), host) {
			continue
		}
		if neg {
			return false
		}
		found = true
	}
	return found
}

// sshMatch is OpenSSH's match_pattern: '*' any run of bytes, '?' exactly
// one, everything else itself.
func sshMatch(pat, s string) bool {
	for len(pat) > 0 {
		switch pat[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if sshMatch(pat[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != pat[0] {
				return false
			}
		}
		pat, s = pat[1:], s[1:]
	}
	return s == ""
}

// movesAddr says whether a config line (keyword and arguments) sets the
// address ssh connects to.
func movesAddr(f []string) bool {
	return len(f) > 0 && (strings.EqualFold(f[0], "port") || strings.EqualFold(f[0], "hostname"))
}

// configArgs splits a config line into its keyword and arguments as ssh
// does (argv_split): at blanks, or the first '=', outside quotes; a quoted
// name keeps its spaces (Include "~/my hosts/*" is one pattern).
func configArgs(line string) []string {
	var out []string
	var cur strings.Builder
	in, q, eq := false, byte(0), false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case q != 0 && c == q:
			q = 0
		case q != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			q, in = c, true
		case c == '\\' && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
			in = true
		case c == ' ' || c == '\t' || c == '=' && !eq && (len(out) == 0 || len(out) == 1 && !in):
			eq = eq || c == '='
			if in {
				out, in = append(out, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func proxyWord(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "proxyjump") || strings.Contains(s, "proxycommand")
}

package remote

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	sshconfig "github.com/kevinburke/ssh_config"
)

// Options are the ssh-like inputs: a target and OpenSSH's flags.
type Options struct {
	Target     string   // [user@]host[:port], or an alias from the ssh config
	Port       int      // -p
	Identities []string // -i
	ConfigFile string   // -F
	Jump       string   // -J
	Opts       []string // -o Key=Value
	Home       string   // for ~ and ~/.ssh; default $HOME
	SSHBinary  string   // the OpenSSH client for `ssh -G`; "" finds it, "none" uses the Go parser
	Prompt     Prompter // asks for unknown host keys and passphrases; nil refuses
	Logf       func(format string, args ...any)
	Clock      Clock // reads the wall and monotonic clocks to find sleeps; nil: the system's
	// gate, when set, is asked before the server's host key is checked,
	// and ends the handshake with its error (speculate.go)
	gate func() error
}

// Config is a target resolved the way OpenSSH resolves it.
type Config struct {
	Alias               string
	HostName            string
	Port                int
	User                string
	IdentityFiles       []string
	IdentityDefaults    bool // the identity files are OpenSSH's defaults, not the user's
	IdentitiesOnly      bool
	IdentityAgent       string   // socket path; "" uses $SSH_AUTH_SOCK, "none" no agent
	KnownHostsFiles     []string // user files first: new keys are added to the first
	StrictHostKey       string   // yes | accept-new | ask | no
	ServerAliveInterval time.Duration
	ServerAliveCountMax int
	ConnectTimeout      time.Duration
	ProxyJump           []string
	Source              string // "ssh -G" or "ssh_config"
}

// Addr is host:port.
func (c Config) Addr() string { return net.JoinHostPort(c.HostName, strconv.Itoa(c.Port)) }

// ConfigError is a configuration mistake: retrying cannot help.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return "ssh config: " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

var defaultIdentities = []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_xmss", "id_dsa"}

// splitTarget reads [user@]host[:port] (and [v6]:port).
func splitTarget(t string) (user, host string, port int, err error) {
	if i := strings.LastIndexByte(t, '@'); i >= 0 {
		user, t = t[:i], t[i+1:]
	}
	host = t
	if h, p, e := net.SplitHostPort(t); e == nil {
		n, perr := strconv.Atoi(p)
		if perr != nil || n <= 0 || n > 65535 {
			return "", "", 0, fmt.Errorf("bad port in %q", t)
		}
		host, port = h, n
	}
	if host == "" || strings.HasPrefix(host, "-") {
		return "", "", 0, fmt.Errorf("bad host %q", t)
	}
	return user, host, port, nil
}

// Resolve applies the ssh config and flags to the target.
func Resolve(ctx context.Context, o Options) (Config, error) {
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	user, host, port, err := splitTarget(o.Target)
	if err != nil {
		return Config{}, &ConfigError{err}
	}
	if o.Port > 0 && port > 0 && o.Port != port {
		return Config{}, &ConfigError{fmt.Errorf("two ports for %s: -p %d and :%d in the host; give one", host, o.Port, port)}
	}
	if o.Port == 0 {
		o.Port = port
	}
	if user != "" {
		o.Opts = append([]string{"User=" + user}, o.Opts...)
	}
	bin := o.SSHBinary
	if bin == "" {
		bin, _ = exec.LookPath("ssh")
	}
	var c Config
	if bin != "" && bin != "none" {
		c, err = resolveWithSSH(ctx, bin, host, o)
	} else {
		c, err = resolveWithParser(host, o)
	}
	if err != nil {
		return Config{}, &ConfigError{err}
	}
	c.Alias = host
	c.finish(o)
	return c, nil
}

// sshGLimit bounds ssh -G (a Match exec that hangs).
const sshGLimit = 10 * time.Second

// resolveWithSSH asks the user's own OpenSSH client: `ssh -G` applies
// Include and Match exactly as ssh would.
func resolveWithSSH(ctx context.Context, bin, host string, o Options) (Config, error) {
	args := []string{"-G"}
	if o.ConfigFile != "" {
		args = append(args, "-F", o.ConfigFile)
	}
	if o.Port > 0 {
		args = append(args, "-p", strconv.Itoa(o.Port))
	}
	for _, i := range o.Identities {
		args = append(args, "-i", i)
	}
	if o.Jump != "" {
		args = append(args, "-J", o.Jump)
	}
	for _, kv := range o.Opts {
		args = append(args, "-o", kv)
	}
	args = append(args, "--", host)
	ctx, cancel := context.WithTimeout(ctx, sshGLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+o.Home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Config{}, fmt.Errorf("ssh -G %s: %v: %s", host, err, strings.TrimSpace(stderr.String()))
	}
	c := Config{Source: "ssh -G", Port: 22}
	get := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "identityfile":
			c.IdentityFiles = append(c.IdentityFiles, v)
		default:
			get[k] = v
		}
	}
	c.HostName, c.User = get["hostname"], get["user"]
	c.Port, _ = strconv.Atoi(get["port"])
	c.IdentitiesOnly = get["identitiesonly"] == "yes" || get["identitiesonly"] == "true"
	c.IdentityAgent = get["identityagent"]
	c.KnownHostsFiles = append(strings.Fields(get["userknownhostsfile"]), strings.Fields(get["globalknownhostsfile"])...)
	c.StrictHostKey = get["stricthostkeychecking"]
	c.ServerAliveInterval = seconds(get["serveraliveinterval"])
	c.ServerAliveCountMax, _ = strconv.Atoi(get["serveralivecountmax"])
	c.ConnectTimeout = seconds(get["connecttimeout"])
	if j := get["proxyjump"]; j != "" && j != "none" {
		c.ProxyJump = strings.Split(j, ",")
	}
	c.IdentityDefaults = allDefaultIdentities(c.IdentityFiles) && len(o.Identities) == 0
	return c, nil
}

func allDefaultIdentities(files []string) bool {
	for _, f := range files {
		base := filepath.Base(f)
		found := false
		for _, d := range defaultIdentities {
			found = found || base == d
		}
		if !found || !strings.HasPrefix(f, "~/.ssh/") {
			return false
		}
	}
	return true
}

// resolveWithParser is the fallback without an OpenSSH client. Command-line
// values come first, as in OpenSSH, where the first value obtained wins.
func resolveWithParser(host string, o Options) (Config, error) {
	path := o.ConfigFile
	if path == "" {
		path = filepath.Join(o.Home, ".ssh", "config")
	}
	var cfg *sshconfig.Config
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if cfg, err = sshconfig.Decode(bytes.NewReader(data)); err != nil {
			return Config{}, fmt.Errorf("%s: %w", path, err)
		}
	case o.ConfigFile != "" || !errors.Is(err, os.ErrNotExist):
		return Config{}, fmt.Errorf("read %s: %w", path, err)
	}
	cli := map[string]string{}
	for _, kv := range o.Opts {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			k, v, ok = strings.Cut(kv, " ")
		}
		if !ok {
			return Config{}, fmt.Errorf("-o %q: want Key=Value", kv)
		}
		if _, seen := cli[strings.ToLower(k)]; !seen {
			cli[strings.ToLower(k)] = strings.TrimSpace(v)
		}
	}
	get := func(key string) string {
		if v, ok := cli[strings.ToLower(key)]; ok {
			return v
		}
		if cfg == nil {
			return ""
		}
		v, _ := cfg.Get(host, key)
		return v
	}
	c := Config{Source: "ssh_config", HostName: get("HostName"), User: get("User")}
	if c.HostName == "" {
		c.HostName = host
	}
	c.Port, _ = strconv.Atoi(get("Port"))
	if o.Port > 0 {
		c.Port = o.Port
	}
	c.IdentityFiles = append(c.IdentityFiles, o.Identities...)
	if v, ok := cli["identityfile"]; ok {
		c.IdentityFiles = append(c.IdentityFiles, v)
	}
	if cfg != nil {
		if all, err := cfg.GetAll(host, "IdentityFile"); err == nil {
			c.IdentityFiles = append(c.IdentityFiles, all...)
		}
	}
	if len(c.IdentityFiles) == 0 {
		for _, d := range defaultIdentities {
			c.IdentityFiles = append(c.IdentityFiles, "~/.ssh/"+d)
		}
		c.IdentityDefaults = true
	}
	c.IdentitiesOnly = strings.EqualFold(get("IdentitiesOnly"), "yes")
	c.IdentityAgent = get("IdentityAgent")
	// ssh's defaults for the files not named (ssh -G lists them)
	uk, gk := strings.Fields(get("UserKnownHostsFile")), strings.Fields(get("GlobalKnownHostsFile"))
	if len(uk) == 0 {
		uk = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"}
	}
	if len(gk) == 0 {
		gk = []string{"/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	c.KnownHostsFiles = append(uk, gk...)
	c.StrictHostKey = strings.ToLower(get("StrictHostKeyChecking"))
	c.ServerAliveInterval = seconds(get("ServerAliveInterval"))
	c.ServerAliveCountMax, _ = strconv.Atoi(get("ServerAliveCountMax"))
	c.ConnectTimeout = seconds(get("ConnectTimeout"))
	jump := o.Jump
	if jump == "" {
		jump = get("ProxyJump")
	}
	if jump != "" && jump != "none" {
		c.ProxyJump = strings.Split(jump, ",")
	}
	return c, nil
}

// finish fills defaults and expands ~ and %-tokens in paths.
func (c *Config) finish(o Options) {
	if c.Port == 0 {
		c.Port = 22
	}
	local := "root"
	if u, err := user.Current(); err == nil {
		local = u.Username
	}
	if c.User == "" {
		c.User = local
	}
	if len(c.KnownHostsFiles) == 0 {
		c.KnownHostsFiles = []string{"~/.ssh/known_hosts", "~/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}
	}
	switch c.StrictHostKey {
	case "true", "yes":
		c.StrictHostKey = "yes"
	case "false", "no", "off":
		c.StrictHostKey = "no"
	case "accept-new":
	default:
		c.StrictHostKey = "ask"
	}
	if c.ServerAliveInterval <= 0 {
		c.ServerAliveInterval = 15 * time.Second // ssh's 0 means off; a monitor needs a watchdog
	}
	if c.ServerAliveCountMax <= 0 {
		c.ServerAliveCountMax = 3
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 15 * time.Second
	}
	tokens := map[byte]string{'h': c.HostName, 'p': strconv.Itoa(c.Port), 'r': c.User, 'u': local, 'd': o.Home, 'n': c.Alias, '%': "%"}
	for i, f := range c.IdentityFiles {
		c.IdentityFiles[i] = expandPath(f, o.Home, tokens)
	}
	for i, f := range c.KnownHostsFiles {
		c.KnownHostsFiles[i] = expandPath(f, o.Home, tokens)
	}
	c.IdentityAgent = agentSocket(c.IdentityAgent, o.Home, tokens)
}

// agentSocket resolves IdentityAgent as OpenSSH does: SSH_AUTH_SOCK (or
// unset) reads that variable, $VAR reads another one, "none" turns the
// agent off (""), anything else is a path with ~, %-tokens and ${VAR}.
func agentSocket(v, home string, tokens map[byte]string) string {
	switch {
	case v == "" || v == "SSH_AUTH_SOCK":
		return os.Getenv("SSH_AUTH_SOCK")
	case strings.EqualFold(v, "none"):
		return ""
	case strings.HasPrefix(v, "$"):
		return os.Getenv(strings.Trim(v[1:], "{}"))
	}
	return os.Expand(expandPath(v, home, tokens), os.Getenv)
}

// expandPath expands a leading ~ and OpenSSH's %h %p %r %u %d %n %% tokens.
func expandPath(p, home string, tokens map[byte]string) string {
	if p == "~" {
		p = home
	} else if strings.HasPrefix(p, "~/") {
		p = filepath.Join(home, p[2:])
	}
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+1 < len(p) {
			if v, ok := tokens[p[i+1]]; ok {
				b.WriteString(v)
				i++
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func seconds(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

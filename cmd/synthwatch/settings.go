package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/synthwatch/synthwatch/parse"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/tui"
)

// A setting is one value every subcommand resolves the same way, with the
// precedence flag > SYNTHWATCH_* environment > [hosts."HOST"] section of
// config.toml > its top level > default.
type settingDef struct {
	key   string // as in config.toml: root, notify.off
	flag  string // the flag that sets it, where a subcommand has that flag
	def   string
	host  bool                            // may be set in a [hosts."…"] section
	file  func(fileConfig) (string, bool) // the top-level value, if set
	hostV func(hostFileConfig) string
	check func(string) error
	dur   bool // a duration
}

var settingDefs = []settingDef{
	{key: "root", flag: "root", def: pipeline.DefaultRoot, host: true,
		file: func(c fileConfig) (string, bool) { return c.Root, c.Root != "" }, hostV: func(h hostFileConfig) string { return h.Root }},
	{key: "server_url", flag: "server-url", def: parse.DefaultServerURL, host: true,
		file: func(c fileConfig) (string, bool) { return c.ServerURL, c.ServerURL != "" }, hostV: func(h hostFileConfig) string { return h.ServerURL }},
	{key: "worker_bin", flag: "worker-bin", def: "", host: true,
		file: func(c fileConfig) (string, bool) { return c.WorkerBin, c.WorkerBin != "" }, hostV: func(h hostFileConfig) string { return h.WorkerBin }},
	{key: "no_install", flag: "no-install", def: "false", host: true, check: checkBool,
		file:  func(c fileConfig) (string, bool) { return boolString(c.NoInstall) },
		hostV: func(h hostFileConfig) string { v, _ := boolString(h.NoInstall); return v }},
	{key: "poll_interval", flag: "poll", def: "2s", check: checkDuration, dur: true,
		file: func(c fileConfig) (string, bool) { return durString(c.PollInterval) }},
	{key: "stall_after", flag: "stall-after", def: "10m", check: checkDuration, dur: true,
		file: func(c fileConfig) (string, bool) { return durString(c.StallAfter) }},
	{key: "disk_floor", def: "5%", check: func(v string) error { _, err := parsePercent(v); return err },
		file: func(c fileConfig) (string, bool) {
			if c.DiskFloor == nil {
				return "", false
			}
			return c.DiskFloor.text, true
		}},
	{key: "notify.osc", def: "true", check: checkBool,
		file: func(c fileConfig) (string, bool) {
			if c.Notify.OSC == nil {
				return "", false
			}
			return strconv.FormatBool(*c.Notify.OSC), true
		}},
	{key: "notify.command", def: "",
		file: func(c fileConfig) (string, bool) { return c.Notify.Command, c.Notify.Command != "" }},
	{key: "notify.disconnect_after", def: "5m", check: checkDuration, dur: true,
		file: func(c fileConfig) (string, bool) { return durString(c.Notify.DisconnectAfter) }},
	{key: "notify.off", def: "", check: checkKinds,
		file: func(c fileConfig) (string, bool) { return strings.Join(c.Notify.Off, ","), c.Notify.Off != nil }},
}

func boolString(b *bool) (string, bool) {
	if b == nil {
		return "", false
	}
	return strconv.FormatBool(*b), true
}

func durString(d *duration) (string, bool) {
	if d == nil {
		return "", false
	}
	return shortDur(d.Duration), true
}

// shortDur is d as people write it: 10m, 1h30m, 2s.
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// envName is the variable that sets key: SYNTHWATCH_NOTIFY_OFF for notify.off.
func envName(key string) string {
	return "SYNTHWATCH_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

func checkDuration(s string) error { _, err := parseDuration(s); return err }

func checkBool(s string) error {
	if _, err := strconv.ParseBool(s); err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	return nil
}

// checkKinds refuses a notify.off name that is no kind of notice: a typo
// would leave the notice on without a word.
func checkKinds(s string) error {
	for _, k := range splitList(s) {
		if !slices.Contains(tui.NotifyKinds, k) {
			return fmt.Errorf("unknown notice %q (known: %s)", k, strings.Join(tui.NotifyKinds, ", "))
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

// setting is a resolved value and where it came from, in the words of
// `git config --show-origin`.
type setting struct {
	Key, Value, Origin string
}

// settings are every setting resolved once for one host.
type settings struct {
	Host       string // the host as given
	File       string // config.toml's path
	FileFound  bool
	HostFrom   string // the [hosts."…"] section that applied, if any
	List       []setting
	Root       string
	ServerURL  string
	WorkerBin  string
	NoInstall  bool // never copy the agent to the host: the fallback reads
	Poll       time.Duration
	StallAfter time.Duration
	DiskFloor  float64 // the free share of the root's filesystem under which it is low (0.05)
	Notify     tui.NotifyConfig
	// ServerSet: server_url was set (not the default), so a launched
	// worker is told it instead of reading pipeline.toml's.
	ServerSet bool
}

// Get is the resolved setting for key.
func (s settings) Get(key string) setting {
	for _, v := range s.List {
		if v.Key == key {
			return v
		}
	}
	return setting{Key: key}
}

// hostSection finds host's section: the name as given, then without user@.
func hostSection(c fileConfig, host string) (hostFileConfig, string, bool) {
	if host == "" {
		return hostFileConfig{}, "", false
	}
	if h, ok := c.Hosts[host]; ok {
		return h, host, true
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		if h, ok := c.Hosts[host[i+1:]]; ok {
			return h, host[i+1:], true
		}
	}
	return hostFileConfig{}, "", false
}

// resolveSettings reads config.toml and resolves every setting for host
// ("" for a local root) from the changed flags of fl, the environment and
// the file. Errors are usage errors (exit 2) that name the value's origin.
func resolveSettings(fl *pflag.FlagSet, host string, getenv func(string) string) (settings, error) {
	p := configPath()
	conf, found, err := loadConfig(p)
	if err != nil {
		return settings{}, usageErr(err)
	}
	s, err := resolveWith(fl, host, getenv, conf)
	s.File, s.FileFound = p, found
	return s, err
}

func resolveWith(fl *pflag.FlagSet, host string, getenv func(string) string, conf fileConfig) (settings, error) {
	s := settings{Host: host}
	hc, section, hasSection := hostSection(conf, host)
	if hasSection {
		s.HostFrom = section
	}
	for _, d := range settingDefs {
		v := setting{Key: d.key, Value: d.def, Origin: "default"}
		var f *pflag.Flag
		if fl != nil && d.flag != "" {
			f = fl.Lookup(d.flag)
		}
		switch {
		case f != nil && f.Changed:
			v.Value, v.Origin = f.Value.String(), "flag --"+d.flag
		case getenv(envName(d.key)) != "":
			v.Value, v.Origin = getenv(envName(d.key)), "env "+envName(d.key)
		case d.host && hasSection && d.hostV(hc) != "":
			v.Value, v.Origin = d.hostV(hc), fmt.Sprintf("config.toml [hosts.%q]", section)
		default:
			if fv, ok := d.file(conf); ok {
				v.Value, v.Origin = fv, "config.toml"
			}
		}
		if d.check != nil && (v.Value != "" || d.def != "") {
			if err := d.check(v.Value); err != nil {
				return s, usageErr(fmt.Errorf("%s (from %s): %w", d.key, v.Origin, err))
			}
		}
		if dv, err := time.ParseDuration(v.Value); err == nil && d.dur {
			v.Value = shortDur(dv) // 10m, whether it was given as 10m or 600s
		}
		s.List = append(s.List, v)
	}
	s.Root = s.Get("root").Value
	s.ServerURL = s.Get("server_url").Value
	s.ServerSet = s.Get("server_url").Origin != "default"
	s.WorkerBin = s.Get("worker_bin").Value
	s.NoInstall, _ = strconv.ParseBool(s.Get("no_install").Value)
	s.Poll, _ = time.ParseDuration(s.Get("poll_interval").Value)
	s.StallAfter, _ = time.ParseDuration(s.Get("stall_after").Value)
	s.DiskFloor, _ = parsePercent(s.Get("disk_floor").Value)
	s.Notify.OSC, _ = strconv.ParseBool(s.Get("notify.osc").Value)
	s.Notify.Command = s.Get("notify.command").Value
	s.Notify.DisconnectAfter, _ = time.ParseDuration(s.Get("notify.disconnect_after").Value)
	s.Notify.Off = map[string]bool{}
	for _, k := range splitList(s.Get("notify.off").Value) {
		s.Notify.Off[k] = true
	}
	return s, nil
}

// override sets key from a source that outranks the rest (--local).
func (s *settings) override(key, value, origin string) {
	for i := range s.List {
		if s.List[i].Key == key {
			s.List[i].Value, s.List[i].Origin = value, origin
		}
	}
	if key == "root" {
		s.Root = value
	}
}

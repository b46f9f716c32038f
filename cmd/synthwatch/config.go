package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/synthwatch/synthwatch/parse"
)

// fileConfig is ~/.config/synthwatch/config.toml ($XDG_CONFIG_HOME honoured,
// macOS included). Every subcommand reads it through resolveSettings.
type fileConfig struct {
	Root         string                    `toml:"root"`
	ServerURL    string                    `toml:"server_url"`
	PollInterval *duration                 `toml:"poll_interval"`
	StallAfter   *duration                 `toml:"stall_after"`
	WorkerBin    string                    `toml:"worker_bin"`
	NoInstall    *bool                     `toml:"no_install"`
	DiskFloor    *percent                  `toml:"disk_floor"`
	Notify       notifyConfig              `toml:"notify"`
	Hosts        map[string]hostFileConfig `toml:"hosts"`
	Fleets       map[string]fleetConfig    `toml:"fleets"`
}

// fleetConfig is a [fleets.NAME] section: the hosts --fleet NAME watches,
// each an alias or user@host:port with its own [hosts."…"] settings.
type fleetConfig struct {
	Hosts []string `toml:"hosts"`
}

type hostFileConfig struct {
	Root      string `toml:"root"`
	ServerURL string `toml:"server_url"`
	WorkerBin string `toml:"worker_bin"`
	NoInstall *bool  `toml:"no_install"`
}

type notifyConfig struct {
	OSC             *bool     `toml:"osc"`
	Command         string    `toml:"command"`
	DisconnectAfter *duration `toml:"disconnect_after"`
	Off             []string  `toml:"off"`
}

// percent is a share written as 5, 2.5, "5%" or "5 %": percent, 0 to 100.
type percent struct{ text string }

func (p *percent) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case string:
		p.text = x
	case int64:
		p.text = fmt.Sprint(x)
	case float64:
		p.text = fmt.Sprint(x)
	default:
		return fmt.Errorf("%v is no percentage", v)
	}
	_, err := parsePercent(p.text)
	return err
}

// parsePercent reads a percentage, more than 0 and less than 100, as a fraction.
func parsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v >= 100 {
		return 0, fmt.Errorf("%q is no percentage between 0 and 100 (say 5%%)", s)
	}
	return v / 100, nil
}

type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	d.Duration = v
	return err
}

// parseDuration is time.ParseDuration for a setting: more than zero.
func parseDuration(s string) (time.Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if v <= 0 {
		return 0, fmt.Errorf("duration %q must be more than zero", s)
	}
	return v, nil
}

func configPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "synthwatch", "config.toml")
}

// loadConfig reads the file at p; a missing file is an empty config.
// A file another user can change (parse.ReadTrusted) is refused when it
// says what runs or where the probes go: worker_bin, server_url, the
// notify command.
func loadConfig(p string) (c fileConfig, found bool, err error) {
	data, untrusted, err := parse.ReadTrusted(p)
	if errors.Is(err, os.ErrNotExist) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return c, true, fmt.Errorf("%s: %w", p, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return c, true, fmt.Errorf("%s: unknown key %q", p, und[0].String())
	}
	if keys := c.decisive(); untrusted != nil && len(keys) > 0 {
		return c, true, fmt.Errorf("refusing %s (what runs and where): %w", strings.Join(keys, ", "), untrusted)
	}
	return c, true, nil
}

// decisive lists the keys c sets that decide what runs or where.
func (c fileConfig) decisive() []string {
	var keys []string
	add := func(set bool, key string) {
		if set && !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	add(c.WorkerBin != "", "worker_bin")
	add(c.ServerURL != "", "server_url")
	add(c.Notify.Command != "", "notify.command")
	for _, h := range c.Hosts {
		add(h.WorkerBin != "", "worker_bin")
		add(h.ServerURL != "", "server_url")
	}
	return keys
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/BurntSushi/toml"
)

// fileConfig is ~/.config/synthwatch/config.toml ($XDG_CONFIG_HOME honoured,
// macOS included). Every subcommand reads it through resolveSettings.
type fileConfig struct {
	Root         string                    `toml:"root"`
	ServerURL    string                    `toml:"server_url"`
	PollInterval *duration                 `toml:"poll_interval"`
	StallAfter   *duration                 `toml:"stall_after"`
	WorkerBin    string                    `toml:"worker_bin"`
	Notify       notifyConfig              `toml:"notify"`
	Hosts        map[string]hostFileConfig `toml:"hosts"`
}

type hostFileConfig struct {
	Root      string `toml:"root"`
	ServerURL string `toml:"server_url"`
	WorkerBin string `toml:"worker_bin"`
}

type notifyConfig struct {
	OSC             *bool     `toml:"osc"`
	Command         string    `toml:"command"`
	DisconnectAfter *duration `toml:"disconnect_after"`
	Off             []string  `toml:"off"`
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
func loadConfig(p string) (c fileConfig, found bool, err error) {
	data, err := os.ReadFile(p)
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
	return c, true, nil
}

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
// macOS included). Flags override it.
type fileConfig struct {
	Root         string                    `toml:"root"`
	ServerURL    string                    `toml:"server_url"`
	PollInterval duration                  `toml:"poll_interval"`
	StallAfter   duration                  `toml:"stall_after"`
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
	OSC             *bool    `toml:"osc"`
	Command         string   `toml:"command"`
	DisconnectAfter duration `toml:"disconnect_after"`
	Off             []string `toml:"off"`
}

type duration struct{ time.Duration }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	d.Duration = v
	return err
}

func configPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "synthwatch", "config.toml")
}

func loadConfig() (fileConfig, error) {
	var c fileConfig
	p := configPath()
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	md, err := toml.Decode(string(data), &c)
	if err != nil {
		return c, fmt.Errorf("%s: %w", p, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return c, fmt.Errorf("%s: unknown key %q", p, und[0].String())
	}
	return c, nil
}

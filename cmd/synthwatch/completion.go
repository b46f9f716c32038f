package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	sshconfig "github.com/kevinburke/ssh_config"
	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/pipeline"
	"github.com/synthwatch/synthwatch/pipeline/timeline"
)

// Shell completion of what the user has named somewhere on this machine:
// hosts from ~/.ssh/config and config.toml, fleet names, and, for restart,
// the categories the dashboard has seen on that host. Nothing connects:
// a tab must not wait on a link or ask for a host key.

// knownHosts is ~/.ssh/config's Host aliases (not patterns) and
// config.toml's hosts, its fleets' hosts included, sorted, once each.
func knownHosts() []string {
	var out []string
	if home, err := os.UserHomeDir(); err == nil {
		if f, err := os.Open(filepath.Join(home, ".ssh", "config")); err == nil {
			cfg, err := sshconfig.Decode(f)
			f.Close()
			if err == nil {
				for _, h := range cfg.Hosts {
					for _, p := range h.Patterns {
						if s := p.String(); !strings.ContainsAny(s, "*?!") {
							out = append(out, s)
						}
					}
				}
			}
		}
	}
	if c, _, err := loadConfig(configPath()); err == nil {
		for h := range c.Hosts {
			out = append(out, h)
		}
		for _, fl := range c.Fleets {
			out = append(out, fl.Hosts...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func withPrefix(all []string, prefix string) []string {
	var out []string
	for _, s := range all {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// completeHosts completes every positional argument as a host (the
// dashboard and status take several).
func completeHosts(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return withPrefix(knownHosts(), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeOneHost completes the first positional argument only.
func completeOneHost(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return completeHosts(cmd, args, toComplete)
}

// completeRestart is restart's HOST, then a CATEGORY of that host as the
// dashboard's history of it (per host and root) names them.
func completeRestart(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return completeHosts(cmd, args, toComplete)
	}
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	root := pipeline.DefaultRoot
	if s, err := resolveSettings(cmd.Flags(), args[0], os.Getenv); err == nil && s.Root != "" {
		root = s.Root
	}
	var cats []string
	for _, e := range timeline.Read(5000, timeline.StatePath(args[0], root)).Recent(5000) {
		if e.Category != "" {
			cats = append(cats, e.Category)
		}
	}
	slices.Sort(cats)
	return withPrefix(slices.Compact(cats), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeFleets is --fleet's names from config.toml.
func completeFleets(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, _, err := loadConfig(configPath())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for n := range c.Fleets {
		names = append(names, n)
	}
	slices.Sort(names)
	return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// addCompletions wires the functions to the commands that take hosts.
func addCompletions(root *cobra.Command) {
	root.ValidArgsFunction = completeHosts
	root.RegisterFlagCompletionFunc("fleet", completeFleets)
	for _, c := range root.Commands() {
		switch c.Name() {
		case "status":
			c.ValidArgsFunction = completeHosts
			c.RegisterFlagCompletionFunc("fleet", completeFleets)
		case "launch", "resume", "kill", "deploy", "report", "config":
			c.ValidArgsFunction = completeOneHost
		case "restart":
			c.ValidArgsFunction = completeRestart
		}
	}
}

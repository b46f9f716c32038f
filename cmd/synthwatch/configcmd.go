package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// newConfigCmd is `synthwatch config [HOST]`: every setting as a command for
// HOST would resolve it, with where the value came from.
func newConfigCmd() *cobra.Command {
	var f hostFlags
	cmd := &cobra.Command{
		Use:   "config [flags] [HOST]",
		Short: "Show each setting for HOST and where it comes from (flag, env, config.toml, default)",
		Long: `config resolves the settings the way every subcommand does, with the precedence
flag > SYNTHWATCH_* environment > [hosts."HOST"] in config.toml > its top level > default,
and prints each value with its origin, like git config --show-origin.` + exitCodesHelp,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErr(fmt.Errorf("one host at a time, got %d arguments", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.resolve(cmd, args); err != nil {
				return err
			}
			printSettings(cmd.OutOrStdout(), f.set)
			return nil
		},
	}
	f.addSettings(cmd)
	cmd.Flags().Duration("poll", 2*time.Second, "poll interval (the dashboard's)")
	cmd.Flags().Duration("stall-after", 10*time.Minute, "a category with no new records for this long is stalled")
	return cmd
}

func printSettings(out io.Writer, s settings) {
	found := "not found, defaults apply"
	if s.FileFound {
		found = "read"
	}
	fmt.Fprintf(out, "config file: %s (%s)\n", s.File, found)
	switch {
	case s.Host == "":
		fmt.Fprintln(out, "host: none given, so no [hosts.\"…\"] section applies")
	case s.HostFrom != "":
		fmt.Fprintf(out, "host: %s, section [hosts.%q]\n", s.Host, s.HostFrom)
	default:
		fmt.Fprintf(out, "host: %s, no [hosts.%q] section\n", s.Host, s.Host)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tVALUE\tORIGIN")
	for _, v := range s.List {
		val := v.Value
		if val == "" {
			val = `""`
		} else if needsQuotes(val) {
			val = strconv.Quote(val)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", v.Key, val, v.Origin)
	}
	tw.Flush()
}

func needsQuotes(s string) bool {
	for _, r := range s {
		if r <= ' ' || r == '"' || r == 0x7f {
			return true
		}
	}
	return false
}

package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/digest"
	"github.com/synthwatch/synthwatch/remote"
)

// newAgentCmd is the host agent in Go: a dashboard starts it over SSH
// (remote.Agent's launcher) and it answers polls on stdin until the link
// ends. Its arguments are the launcher's (remote.AgentMain), so an older
// or newer binary answers a usage error or its own protocol, and the
// launcher leaves the host to the shell. Not for people: hidden.
func newAgentCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "agent --proto | --serve PROTO --skip N NONCE [REQUEST]",
		Short:              "Answer a dashboard's polls on stdin (started by the dashboard over SSH)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			runAgent(args)
			return nil
		},
	}
}

// runAgent is "synthwatch agent ARGS": main calls it before the command
// tree is built (every status, report and dashboard waits for an agent's
// start), and the hidden command names it for help and completion.
func runAgent(args []string) {
	if code := remote.AgentMain(args, os.Stdin, os.Stdout, keepStamps); code != 0 {
		os.Exit(code) // the launcher reads the status: 75 and 2 leave the host to the shell
	}
}

// keepStamps is the agent's keep of a report's stamps of the records it
// sums: where report's digest looks for them (keepDir: none under
// SYNTHWATCH_NO_INSTALL), in the host's zone as the digest reads it.
func keepStamps(records []string) { digest.KeepStamps(records, keepDir(), time.Local) }

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/synthwatch/synthwatch/remote"
)

// newAgentCmd is the host agent in Go: a dashboard starts it over SSH
// (remote.Agent) when the deployed binary speaks its protocol, and it
// answers polls on stdin until the link ends. Not for people: hidden.
func newAgentCmd() *cobra.Command {
	var proto bool
	cmd := &cobra.Command{
		Use:    "agent NONCE",
		Short:  "Answer a dashboard's polls on stdin (started by the dashboard over SSH)",
		Hidden: true,
		Args:   cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if proto {
				fmt.Fprintln(cmd.OutOrStdout(), remote.AgentProto)
				return nil
			}
			if len(args) != 1 {
				return usageErr(fmt.Errorf("agent: want the nonce"))
			}
			if err := remote.ServeAgent(os.Stdin, os.Stdout, args[0]); err != nil {
				return &exitError{70, err} // as the shell agent's bad request
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&proto, "proto", false, "print the protocol this agent speaks and exit")
	return cmd
}

// Command synthwatch watches and steers a multi-day synthetic-data job on a
// GPU host over SSH, and is also the worker that runs that job on the host.
package main

import (
	"errors"
	"fmt"
	"os"
)

func main() {
	err := newRoot().Execute()
	if err == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "synthwatch:", err)
	var ec exitCoder
	if errors.As(err, &ec) {
		os.Exit(ec.ExitCode())
	}
	os.Exit(1)
}

// exitCoder lets a subcommand choose its exit status (see the README).
type exitCoder interface{ ExitCode() int }

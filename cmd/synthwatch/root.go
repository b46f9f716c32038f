package main

import (
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version or VCS revision from the build info is used.
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "synthwatch",
		Short: "Watch and steer a synthetic-data generation job on a GPU host over SSH",
		Long: `synthwatch keeps an SSH connection to a GPU host that runs an SGLang server and
the synthwatch inference worker, and shows per-category progress, throughput,
stalls and server health. The same binary is the worker on the host.`,
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newWorkerCmd(), newConfigCmd(), newSimCmd(), newDemoCmd(), newStatusCmd(), newReportCmd(), newDigestCmd(), newDeployCmd(), newKillCmd(), newRestartCmd(), newAgentCmd(),
		newLaunchCmd("launch", "Start the worker on the host"),
		newLaunchCmd("resume", "Start the worker again; it skips what is done"))
	addDashboard(root)
	addCompletions(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	return root
}

package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/load"
)

func newToolsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Manage the JavaScript and TypeScript tools of the tools directories",
		Args:  usage(cobra.NoArgs),
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "install [NAME...]",
		Short: "Install the npm dependencies of packaged tools (npm ci, with no install scripts, confined to the tool's directory)",
		Long: "For each packaged tool (a directory with a tool.json in .lathe/tools, the user's tools directory or a\n" +
			"tools_dirs directory) that has a package-lock.json, or each one named, lathe tools install runs\n" +
			"npm ci --ignore-scripts in the tool's directory, under the standard sandbox: it writes only that\n" +
			"directory, and has the network to fetch the packages. No package's install script runs. The tool's\n" +
			"files change with its node_modules, so it needs your trust again (lathe trust FILE) before it runs.",
		Args: usage(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := g.loadOptions(trustWarn)
			if err := load.InstallTools(context.Background(), opts, args, g.streams.Out); err != nil {
				return g.loadError(err)
			}
			return nil
		},
	})
	return cmd
}

package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/process"
)

// newCacheCmd manages what lathe caches between runs: the schemas that
// local tools gave of themselves.
func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show or clear the cache of local tools' schemas and MCP servers' tool lists",
		Long: "lathe asks a local tool without configured parameters for its schema once, and keeps the answer on disk,\n" +
			"keyed by the binary's path, size and modification time, so that it is asked again only when it changes.\n" +
			"The cache lives in $" + process.CacheDirEnv + "/schemas, or in lathe/schemas under the user's cache directory.\n" +
			"The tool lists of upstream MCP servers are kept beside it, in mcp/, so that a command starts no server\n" +
			"before it calls one of its tools.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "clear",
		Short: "Forget every cached schema and tool list, so that each local tool and MCP server is asked again",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := process.DefaultCacheDir()
			if dir == "" {
				fmt.Fprintln(g.streams.Out, "lathe keeps no cache here: there is no cache directory")
				return nil
			}
			n, err := process.NewCache(dir).Clear()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "removed %d cached %s from %s\n", n, plural(n, "schema", "schemas"), dir)
			if mdir := load.ToolCacheDir(); mdir != "" {
				n, err := mcp.NewToolCache(mdir).Clear()
				if err != nil {
					return err
				}
				fmt.Fprintf(g.streams.Out, "removed %d cached MCP tool %s from %s\n", n, plural(n, "list", "lists"), mdir)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "dir",
		Short: "Print the directory of the schema cache",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(g.streams.Out, process.DefaultCacheDir())
			return nil
		},
	})
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

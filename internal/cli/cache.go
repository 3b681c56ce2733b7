package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/runtime/process"
)

// newCacheCmd manages what lathe caches between runs: the schemas that
// local tools gave of themselves.
func newCacheCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show or clear the cache of local tools' schemas",
		Long: "lathe asks a local tool without configured parameters for its schema once, and keeps the answer on disk,\n" +
			"keyed by the binary's path, size and modification time, so that it is asked again only when it changes.\n" +
			"The cache lives in $" + process.CacheDirEnv + "/schemas, or in lathe/schemas under the user's cache directory.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "clear",
		Short: "Forget every cached schema, so that each local tool is asked again",
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

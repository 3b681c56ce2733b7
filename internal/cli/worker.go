package cli

import (
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/temporal"
	"github.com/lathe-tools/lathe/tool"
)

// temporalFlags are the --temporal-address and --temporal-namespace of a
// command, which override the [temporal] table.
type temporalFlags struct {
	address, namespace string
}

// dispatch is the loader's hook for a configuration that routes tools to
// queues: a client of the Temporal server the [temporal] table, or the
// flags, name. Only a configuration with a route dials.
func (g *globals) dispatch(ctx context.Context, cfg *config.Config) (load.Dispatcher, error) {
	c, err := g.dialTemporal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// dialTemporal connects to the Temporal server of cfg's [temporal] table,
// or of the flags.
func (g *globals) dialTemporal(ctx context.Context, cfg *config.Config) (*temporal.Client, error) {
	opts := temporal.Options{Address: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace, Logger: g.logger()}
	if g.temporal.address != "" {
		opts.Address = g.temporal.address
	}
	if g.temporal.namespace != "" {
		opts.Namespace = g.temporal.namespace
	}
	return temporal.Dial(ctx, opts)
}

func newWorkerCmd(g *globals) *cobra.Command {
	var queue string
	cmd := &cobra.Command{
		Use:   "worker --queue NAME",
		Short: "Serve the tools to callers elsewhere, as a worker of a Temporal task queue",
		Long: "Serve every tool of the workspace on the Temporal task queue NAME, for the lathe of another machine\n" +
			"whose configuration routes tools there (queue = \"NAME\" in a [tools.NAME], [toolsets.NAME] or\n" +
			"[mcp.NAME] table). Each call runs through this workspace's own pipeline: its validation, its policy\n" +
			"(with no one to ask here, a call the policy asks about is denied), its sandbox and its audit log.\n" +
			"What is routed to NAME in this configuration runs here. The server is the [temporal] table's, or\n" +
			"--temporal-address and --temporal-namespace. Many workers may serve one queue; stop one with\n" +
			"SIGINT or SIGTERM.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !config.ValidQueue(queue) {
				return &usageError{fmt.Errorf("--queue %q: want a queue name (letters, digits, '.', '_' and '-')", queue)}
			}
			// A worker has no one to ask and no terminal of its caller:
			// an untrusted configuration stops it, and ask means deny.
			g.trust = trustRefuse
			g.hooks = tool.Hooks{}
			g.approver = nil
			g.longLived = true
			g.serving = queue
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			w, err := g.openWorkspace(ctx)
			if err != nil {
				return err
			}
			defer w.Close()
			c, err := g.dialTemporal(ctx, w.Config)
			if err != nil {
				return err
			}
			defer c.Close()
			tuneGC()
			fmt.Fprintf(g.streams.Err, "lathe: serving %d tools on queue %q\n", len(w.Engine.Tools()), queue)
			if err := temporal.Serve(ctx, c, queue, w.Engine); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the task queue to serve (required)")
	cmd.Flags().StringVar(&g.temporal.address, "temporal-address", "", "the Temporal server's frontend, HOST:PORT (default: [temporal] address, else "+temporal.DefaultAddress+")")
	cmd.Flags().StringVar(&g.temporal.namespace, "temporal-namespace", "", "the Temporal namespace (default: [temporal] namespace, else "+temporal.DefaultNamespace+")")
	return cmd
}

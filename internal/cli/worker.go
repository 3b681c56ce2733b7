package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

// temporalFlags are the --temporal-address and --temporal-namespace of a
// command, which override the [temporal] table.
type temporalFlags struct {
	address, namespace string
}

// Dispatch is what the CLI asks of a runtime that sends calls to workers
// elsewhere: a client of its server, which finds the tools of a queue's
// workers for the loader and serves this workspace's tools as a worker.
// The CLI does not import the Temporal SDK itself, so that programs that
// embed it (package cli) do not compile it unless they ask: package
// cli/temporalcli provides it with package runtime/temporal, and lathe's
// own command imports that.
type Dispatch interface {
	// Dial connects to the server at address, in namespace; "" means the
	// runtime's default of each.
	Dial(ctx context.Context, address, namespace string, logger *slog.Logger) (DispatchClient, error)
	// Defaults names the address and namespace that "" means, for help.
	Defaults() (address, namespace string)
}

// DispatchClient is a connection to a [Dispatch] runtime's server.
type DispatchClient interface {
	load.Dispatcher
	// Serve serves e's tools on queue until ctx ends.
	Serve(ctx context.Context, queue string, e *lathe.Engine) error
	Close() error
}

var (
	dispatchMu      sync.Mutex
	dispatchRuntime Dispatch
)

// SetDispatch makes d the runtime that reaches the workers of queues (as
// package cli/temporalcli does when imported); nil leaves none, and a
// configuration that routes a tool to a queue is then an error that says so.
func SetDispatch(d Dispatch) {
	dispatchMu.Lock()
	dispatchRuntime = d
	dispatchMu.Unlock()
}

func dispatchRuntimeOf() Dispatch {
	dispatchMu.Lock()
	defer dispatchMu.Unlock()
	return dispatchRuntime
}

// errNoDispatch says what is missing when a configuration routes a tool
// to a queue, or lathe worker runs, in a program built without a runtime
// that reaches workers.
var errNoDispatch = errors.New("this program has no runtime for task queues (lathe's own command has Temporal's: " +
	"a program built on package cli imports github.com/lathe-tools/lathe/cli/temporalcli for it)")

// dispatch is the loader's hook for a configuration that routes tools to
// queues: a client of the server the [temporal] table, or the flags, name.
// Only a configuration with a route dials.
func (g *globals) dispatch(ctx context.Context, cfg *config.Config) (load.Dispatcher, error) {
	c, err := g.dialTemporal(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// dialTemporal connects to the Temporal server of cfg's [temporal] table,
// or of the flags.
func (g *globals) dialTemporal(ctx context.Context, cfg *config.Config) (DispatchClient, error) {
	d := dispatchRuntimeOf()
	if d == nil {
		return nil, errNoDispatch
	}
	address, namespace := cfg.Temporal.Address, cfg.Temporal.Namespace
	if g.temporal.address != "" {
		address = g.temporal.address
	}
	if g.temporal.namespace != "" {
		namespace = g.temporal.namespace
	}
	return d.Dial(ctx, address, namespace, g.logger())
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
			if err := c.Serve(ctx, queue, w.Engine); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&queue, "queue", "", "the task queue to serve (required)")
	address, namespace := "none: this program has no Temporal runtime", "none"
	if d := dispatchRuntimeOf(); d != nil {
		address, namespace = d.Defaults()
	}
	cmd.Flags().StringVar(&g.temporal.address, "temporal-address", "", "the Temporal server's frontend, HOST:PORT (default: [temporal] address, else "+address+")")
	cmd.Flags().StringVar(&g.temporal.namespace, "temporal-namespace", "", "the Temporal namespace (default: [temporal] namespace, else "+namespace+")")
	return cmd
}

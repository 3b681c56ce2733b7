// Package temporalcli gives lathe's command line tool calls dispatched to
// workers through Temporal, with package runtime/temporal: imported for its
// effect, it makes `queue = "NAME"` in a configuration send calls to the
// workers of that task queue, and `lathe worker --queue NAME` serve them
// (docs/temporal.md).
//
//	import _ "github.com/lathe-tools/lathe/cli/temporalcli"
//
// lathe's own command imports it. A program that embeds the command line
// (package cli) without it compiles no Temporal SDK; a configuration with a
// queue then fails to load, saying so.
package temporalcli

import (
	"context"
	"log/slog"

	"github.com/lathe-tools/lathe"
	internal "github.com/lathe-tools/lathe/internal/cli"
	"github.com/lathe-tools/lathe/runtime/temporal"
)

func init() { internal.SetDispatch(dispatch{}) }

type dispatch struct{}

func (dispatch) Dial(ctx context.Context, address, namespace string, logger *slog.Logger) (internal.DispatchClient, error) {
	c, err := temporal.Dial(ctx, temporal.Options{Address: address, Namespace: namespace, Logger: logger})
	if err != nil {
		return nil, err
	}
	return client{c}, nil
}

func (dispatch) Defaults() (address, namespace string) {
	return temporal.DefaultAddress, temporal.DefaultNamespace
}

// client is a Temporal client that also serves as a worker.
type client struct{ *temporal.Client }

func (c client) Serve(ctx context.Context, queue string, e *lathe.Engine) error {
	return temporal.Serve(ctx, c.Client, queue, e)
}

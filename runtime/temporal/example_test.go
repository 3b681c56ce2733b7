package temporal_test

import (
	"context"
	"log"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/temporal"
)

// A caller opens its workspace with a dispatcher, so that the tools its
// lathe.toml routes to a queue (queue = "gpu") come from that queue's
// workers; a worker opens its own workspace, serving the queue, and serves
// its engine on it. Both ends need a Temporal server (temporal server
// start-dev, for a try).
func Example() {
	ctx := context.Background()

	// The worker, on the machine with the GPU.
	go func() {
		ws, err := load.Open(ctx, load.Options{Dir: "/srv/gpu-tools", Serving: "gpu", RequireTrust: true})
		if err != nil {
			log.Fatal(err)
		}
		defer ws.Close()
		c, err := temporal.Dial(ctx, temporal.Options{Address: "temporal.internal:7233"})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		log.Fatal(temporal.Serve(ctx, c, "gpu", ws.Engine))
	}()

	// The caller.
	ws, err := load.Open(ctx, load.Options{Dir: "/path/to/repo",
		Dispatch: func(ctx context.Context, cfg *config.Config) (load.Dispatcher, error) {
			c, err := temporal.Dial(ctx, temporal.Options{Address: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace})
			if err != nil {
				return nil, err
			}
			return c, nil
		}})
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()
}

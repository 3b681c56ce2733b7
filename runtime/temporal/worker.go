package temporal

import (
	"context"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// heartbeatEvery is how often a worker heartbeats a running call: the
// delay with which a cancellation reaches the tool, at most, plus the
// server's.
const heartbeatEvery = 200 * time.Millisecond

// stopGrace is how long a stopping worker waits for the calls it runs.
const stopGrace = 5 * time.Second

// Serve serves the tools of e on queue until ctx ends, then stops taking
// calls and gives those running [stopGrace] to end; a call still running
// then is cancelled, and its caller sees it as a worker that died (run
// again elsewhere where the tool allows). Every call runs through e's
// pipeline, under e's policy: what a caller's configuration allows does
// not widen what this worker's allows.
func Serve(ctx context.Context, c *Client, queue string, e *lathe.Engine) error {
	s := &server{engine: e}
	w := worker.New(c.c, queue, worker.Options{
		// A heartbeat is where a cancellation comes in: it must not wait
		// the SDK's default of up to a minute.
		DefaultHeartbeatThrottleInterval: heartbeatEvery,
		MaxHeartbeatThrottleInterval:     heartbeatEvery,
		WorkerStopTimeout:                stopGrace,
	})
	w.RegisterWorkflowWithOptions(callWorkflow, workflow.RegisterOptions{Name: callName})
	w.RegisterWorkflowWithOptions(listWorkflow, workflow.RegisterOptions{Name: listName})
	w.RegisterActivityWithOptions(s.call, activity.RegisterOptions{Name: callName})
	w.RegisterActivityWithOptions(s.list, activity.RegisterOptions{Name: listName})
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	w.Stop()
	return nil
}

// server is what a worker runs its activities with.
type server struct {
	engine *lathe.Engine
}

// call runs one call through the worker's engine. It heartbeats while the
// call runs, with the call's last progress: the heartbeat's answer is how
// the cancellation of the call reaches its context.
func (s *server) call(ctx context.Context, in callInput) (callOutput, error) {
	c := in.Call
	c.ID = activity.GetInfo(ctx).ActivityID
	var (
		mu   sync.Mutex
		last *tool.Progress
	)
	beat := func() {
		mu.Lock()
		p := last
		mu.Unlock()
		if p != nil {
			activity.RecordHeartbeat(ctx, *p)
		} else {
			activity.RecordHeartbeat(ctx)
		}
	}
	ctx = tool.WithHooks(ctx, tool.Hooks{Progress: func(p tool.Progress) {
		mu.Lock()
		last = &p
		mu.Unlock()
		beat()
	}})
	if in.Session != "" {
		ctx = lathe.WithSession(ctx, in.Session)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		t := time.NewTicker(heartbeatEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				beat()
			}
		}
	}()
	out := s.engine.Call(ctx, &c)
	if ctx.Err() != nil && activity.IsActivity(ctx) {
		// The caller has gone or cancelled: it reads no result, and the
		// workflow reports the cancellation.
		return callOutput{}, temporal.NewCanceledError()
	}
	// The version is taken after the call, from the registry as it is
	// now, so that a call that changed it (or ran while it changed)
	// tells the caller at once. Hashing the definitions costs far less
	// than the round trip through the server.
	return callOutput{Outcome: *out, Registry: registryVersion(s.engine.Tools())}, nil
}

// list publishes the worker's tools.
func (s *server) list(ctx context.Context) (listOutput, error) {
	defs := s.engine.Tools()
	return listOutput{Registry: registryVersion(defs), Tools: defs}, nil
}

// callWorkflow runs one call as one activity, whose ID is the call's.
func callWorkflow(ctx workflow.Context, in callInput, plan callPlan) (callOutput, error) {
	attempts := int32(1)
	if plan.Retry {
		// Unbounded, within the call's timeout (ScheduleToClose).
		attempts = 0
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:             in.Call.ID,
		StartToCloseTimeout:    plan.Timeout,
		ScheduleToCloseTimeout: plan.Timeout,
		HeartbeatTimeout:       plan.Heartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    100 * time.Millisecond,
			BackoffCoefficient: 2,
			MaximumInterval:    2 * time.Second,
			MaximumAttempts:    attempts,
		},
	})
	var out callOutput
	err := workflow.ExecuteActivity(ctx, callName, in).Get(ctx, &out)
	return out, err
}

// listWorkflow asks one worker of the queue for its tools.
func listWorkflow(ctx workflow.Context, timeout time.Duration) (listOutput, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ScheduleToCloseTimeout: timeout,
		RetryPolicy:            &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	var out listOutput
	err := workflow.ExecuteActivity(ctx, listName).Get(ctx, &out)
	return out, err
}

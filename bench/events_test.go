package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkBuiltinEvents is BenchmarkBuiltin (one caller) with the engine's
// events: nobody subscribed (the cost of being able to publish: one atomic
// load per call), a subscriber to registry changes alone (what lathe serve
// holds: calls are not traced for it), and a subscriber to every event
// (each call publishes its start and end to a subscriber's queue, which a
// goroutine of its own drains). Each is timed against the typed floor in the
// same run.
func BenchmarkBuiltinEvents(b *testing.B) {
	for _, c := range []struct {
		name  string
		kinds []lathe.EventKind
		sub   bool
	}{
		{name: "subscribers=0"},
		{name: "subscribers=1/tools_changed", kinds: []lathe.EventKind{lathe.EventToolsChanged}, sub: true},
		{name: "subscribers=1/all", sub: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFloor(b)
			e := newSearchEngine(b)
			var seen atomic.Int64
			if c.sub {
				cancel := e.Subscribe(func(lathe.Event) { seen.Add(1) }, c.kinds...)
				b.Cleanup(cancel)
			}
			ctx := context.Background()
			compare(b, 1, func() {
				if _, err := f.call(ctx, fullArgs); err != nil {
					b.Error(err)
				}
			}, func() {
				out := e.Call(ctx, &tool.Call{Name: "search", Arguments: fullArgs})
				if out.Result == nil || out.Result.IsError {
					b.Errorf("engine call failed: %+v", out)
				}
			})
			// The subscriber runs on a goroutine of its own: give it time
			// to take its first events before saying it got none.
			for wait := time.Now().Add(10 * time.Second); c.sub && len(c.kinds) == 0 && seen.Load() == 0; {
				if time.Now().After(wait) {
					b.Fatal("the subscriber to every event saw none within 10s")
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
}

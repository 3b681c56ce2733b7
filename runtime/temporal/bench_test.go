//go:build temporal

package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/temporal"
	"github.com/lathe-tools/lathe/tool"
)

// benchNoop is the tool both ends of the benchmarks call: it does nothing,
// so that what is measured is the way to it.
func benchNoop() tool.Tool {
	return tool.Tool{
		Definition: tool.Definition{Name: "noop", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tool.Annotations{ReadOnlyHint: true}},
		Runtime: tool.RuntimeFunc(func(context.Context, *tool.Definition, *tool.Call) (*tool.Outcome, error) {
			return &tool.Outcome{Result: tool.TextResult("ok")}, nil
		}),
	}
}

// serveNoop starts n workers, in this process, each with an engine of
// its own holding benchNoop, on queue.
func serveNoop(b *testing.B, srv *devServer, queue string, n int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	for range n {
		c, err := temporal.Dial(ctx, temporal.Options{Address: srv.Addr(), CacheDir: "-"})
		if err != nil {
			b.Fatal(err)
		}
		e := lathe.New(lathe.Options{})
		if err := e.Register(benchNoop()); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			defer e.Close()
			if err := temporal.Serve(ctx, c, queue, e); err != nil {
				b.Error(err)
			}
		}()
	}
}

// remoteEngine is a caller's engine holding the tools of queue.
func remoteEngine(b *testing.B, srv *devServer, queue string) *lathe.Engine {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := temporal.Dial(ctx, temporal.Options{Address: srv.Addr(), CacheDir: "-"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	var ts []tool.Tool
	for ctx.Err() == nil {
		if ts, err = c.Queue(ctx, queue, true, nil); err == nil {
			break
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	e := lathe.New(lathe.Options{})
	b.Cleanup(func() { e.Close() })
	if err := e.Register(ts...); err != nil {
		b.Fatal(err)
	}
	return e
}

// percentiles reports the 50th and 99th percentiles of d, in
// microseconds.
func percentiles(b *testing.B, d []time.Duration, prefix string) (p50, p99 float64) {
	slices.Sort(d)
	at := func(q float64) float64 {
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Nanoseconds()) / 1e3
	}
	p50, p99 = at(0.50), at(0.99)
	b.ReportMetric(p50, prefix+"p50-µs")
	b.ReportMetric(p99, prefix+"p99-µs")
	return p50, p99
}

// BenchmarkDispatch measures what sending a call to a worker costs: the
// same no-op call, through the same engine pipeline, made locally and
// made on a worker of a queue, through a development server on this
// machine. It reports each one's p50 and p99, and the ratios.
func BenchmarkDispatch(b *testing.B) {
	srv := startDevServer(b, "127.0.0.1")
	serveNoop(b, srv, "bench", 1)
	remote := remoteEngine(b, srv, "bench")
	local := lathe.New(lathe.Options{})
	b.Cleanup(func() { local.Close() })
	if err := local.Register(benchNoop()); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	c := &tool.Call{Name: "noop", Arguments: json.RawMessage(`{}`)}
	// Warm both ways up: the first remote call opens streams and caches.
	for range 5 {
		if err := remote.Call(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	lt := make([]time.Duration, 0, b.N)
	rt := make([]time.Duration, 0, b.N)
	for range b.N {
		t0 := time.Now()
		if err := local.Call(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := remote.Call(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
		lt = append(lt, t1.Sub(t0))
		rt = append(rt, time.Since(t1))
	}
	b.StopTimer()
	l50, l99 := percentiles(b, lt, "local-")
	r50, r99 := percentiles(b, rt, "remote-")
	if l50 > 0 && l99 > 0 {
		b.ReportMetric(r50/l50, "p50-ratio")
		b.ReportMetric(r99/l99, "p99-ratio")
	}
}

// BenchmarkThroughput measures how many no-op calls a queue finishes per
// second, with one and with four workers on it, 32 calls in flight.
func BenchmarkThroughput(b *testing.B) {
	srv := startDevServer(b, "127.0.0.1")
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			queue := fmt.Sprintf("tp%d", n)
			serveNoop(b, srv, queue, n)
			e := remoteEngine(b, srv, queue)
			ctx := context.Background()
			c := &tool.Call{Name: "noop", Arguments: json.RawMessage(`{}`)}
			var left atomic.Int64
			left.Store(int64(b.N))
			var failed atomic.Value
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for left.Add(-1) >= 0 {
						if err := e.Call(ctx, c).Err(); err != nil {
							failed.Store(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

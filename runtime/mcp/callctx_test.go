package mcp

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"
)

type otherKey struct{}

// waitEnd fails the test unless ch closes within 10 s; what says what
// failed to end.
func waitEnd(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestCallCtxValues: the context names its request and passes every other
// value on from its parent.
func TestCallCtxValues(t *testing.T) {
	c := newCallCtx(context.WithValue(context.Background(), otherKey{}, "parent's"))
	c.id = 7
	if got, _ := c.Value(inflightKey{}).(uint64); got != 7 {
		t.Errorf("inflightKey: got %v, want 7", c.Value(inflightKey{}))
	}
	if got := c.Value(otherKey{}); got != "parent's" {
		t.Errorf("the parent's value: got %v", got)
	}
	if d, ok := c.Deadline(); ok {
		t.Errorf("a deadline the parent does not have: %v", d)
	}
}

// TestCallCtxAbort: abort ends the context, cancelled, whether its channel
// was asked for before or after, and leaves the parent alone.
func TestCallCtxAbort(t *testing.T) {
	for _, before := range []bool{true, false} {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := newCallCtx(parent)
		var done <-chan struct{}
		if before {
			done = c.Done()
		}
		if c.Err() != nil {
			t.Fatalf("ended before anything ended it: %v", c.Err())
		}
		c.abort()
		c.abort() // again: nothing
		if !before {
			done = c.Done()
		}
		if !closed(done) || !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("asked before abort %v: Done closed %v, Err %v; want closed, canceled", before, closed(done), c.Err())
		}
		if _, aborted := ends(c); !closed(aborted) {
			t.Errorf("asked before abort %v: the abort's channel is open", before)
		}
		if parent.Err() != nil {
			t.Errorf("abort ended the parent")
		}
	}
}

// TestCallCtxParentEnds: the parent's end ends the context with the
// parent's error; Err and Done agree at once, though the parent's news of
// its end reaches a derived context a moment later.
func TestCallCtxParentEnds(t *testing.T) {
	parent, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	c := newCallCtx(parent)
	done := c.Done()
	<-parent.Done()
	if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Err after the parent's deadline: %v", err)
	}
	if !closed(done) {
		t.Fatal("Err says ended, Done is open")
	}
	if ended, aborted := ends(c); !closed(ended) || closed(aborted) {
		t.Errorf("ends: the parent's channel closed %v, the abort's %v; want true, false", closed(ended), closed(aborted))
	}
	// Without a channel asked for, only the parent's end says it.
	parent2, cancel2 := context.WithCancel(context.Background())
	c2 := newCallCtx(parent2)
	cancel2()
	if !errors.Is(c2.Err(), context.Canceled) || !closed(c2.Done()) {
		t.Errorf("a parent cancelled first: Err %v, Done closed %v", c2.Err(), closed(c2.Done()))
	}
}

// TestCallCtxDerived: a context derived from it ends with it, by abort or
// by the parent, as one derived from context.WithCancel would.
func TestCallCtxDerived(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	c := newCallCtx(parent)
	child, stop := context.WithCancel(c)
	defer stop()
	ran := make(chan struct{})
	context.AfterFunc(c, func() { close(ran) })
	c.abort()
	waitEnd(t, child.Done(), "a derived context outlived the abort")
	waitEnd(t, ran, "an AfterFunc did not run at the abort")
	cancel()

	parent, cancel = context.WithCancel(context.Background())
	c = newCallCtx(parent)
	child, stop = context.WithCancel(c)
	defer stop()
	cancel()
	waitEnd(t, child.Done(), "a derived context outlived the parent")
}

// TestCallCtxRelease: once the request is over, the context is ended,
// Done and Err agreeing, so that whatever was derived from it ends too.
func TestCallCtxRelease(t *testing.T) {
	c := newCallCtx(context.Background())
	child, stop := context.WithCancel(c)
	defer stop()
	c.release()
	if !closed(c.Done()) || c.Err() == nil {
		t.Fatalf("after release: Done closed %v, Err %v", closed(c.Done()), c.Err())
	}
	waitEnd(t, child.Done(), "a derived context outlived the request")
}

// TestCallCtxDerivedNoGoroutine: contexts derived from it register with it,
// as with a context.WithCancel's; the context package would otherwise start
// a goroutine for each, waiting for its end.
func TestCallCtxDerivedNoGoroutine(t *testing.T) {
	c := newCallCtx(context.Background())
	defer c.release()
	before := runtime.NumGoroutine()
	var stops []context.CancelFunc
	for range 100 {
		_, stop := context.WithCancel(c)
		stops = append(stops, stop)
	}
	if n := runtime.NumGoroutine() - before; n > 10 {
		t.Errorf("100 derived contexts started %d goroutines", n)
	}
	for _, stop := range stops {
		stop()
	}
}

// TestCallCtxConcurrent: abort, Done, Err and release from several
// goroutines at once (run with -race) leave it ended, its channel closed.
func TestCallCtxConcurrent(t *testing.T) {
	for range 200 {
		parent, cancel := context.WithCancel(context.Background())
		c := newCallCtx(parent)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				switch i {
				case 0:
					c.abort()
				case 1:
					<-c.Done()
				case 2:
					for c.Err() == nil {
					}
				case 3:
					cancel()
				}
			})
		}
		wg.Wait()
		cancel()
		c.release()
		if c.Err() == nil || !closed(c.Done()) {
			t.Fatalf("Err %v, Done closed %v", c.Err(), closed(c.Done()))
		}
	}
}

// BenchmarkRequestContext: the context a request to a server is made with
// and waited on, under a parent that watches its end only once asked (as
// the engine's call context does): context.WithCancel and
// context.WithValue, the parent's channel then asked for, against callCtx
// waited on by ends.
func BenchmarkRequestContext(b *testing.B) {
	root, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.Run("withcancel", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			parent, end := context.WithCancel(root)
			rctx, stop := context.WithCancel(parent)
			ctx := context.WithValue(rctx, inflightKey{}, uint64(1))
			if closed(ctx.Done()) {
				b.Fatal("ended")
			}
			stop()
			end()
		}
	})
	b.Run("callctx", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			parent, end := context.WithCancel(root)
			c := newCallCtx(parent)
			ended, aborted := ends(c)
			if closed(ended) || closed(aborted) {
				b.Fatal("ended")
			}
			c.release()
			end()
		}
	})
}

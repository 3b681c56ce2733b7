package lathe

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

func TestDeadlineCtxNoTimerUnlessDoneIsAskedFor(t *testing.T) {
	c := withDeadline(context.Background(), time.Now().Add(time.Hour))
	if err := c.Err(); err != nil {
		t.Fatalf("Err = %v before the deadline", err)
	}
	c.release()
	if c.timer != nil || c.done != nil {
		t.Error("a timer or channel was made though nobody asked for Done")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err after release = %v, want Canceled", c.Err())
	}
}

func TestDeadlineCtxDoneClosesAtTheDeadline(t *testing.T) {
	c := withDeadline(context.Background(), time.Now().Add(20*time.Millisecond))
	defer c.release()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close at the deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Errorf("Err = %v, want DeadlineExceeded", c.Err())
	}
}

func TestDeadlineCtxErrReadsTheClock(t *testing.T) {
	c := withDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer c.release()
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v past the deadline", c.Err())
	}
	// Err returned an error, so Done must be closed when asked for.
	select {
	case <-c.Done():
	default:
		t.Error("Done open though Err returned an error")
	}
}

func TestDeadlineCtxFollowsItsParent(t *testing.T) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	c := withDeadline(parent, time.Now().Add(time.Hour))
	defer c.release()
	if c.Value(ctxKey{}) != "v" {
		t.Error("values of the parent are lost")
	}
	done := c.Done()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Done did not close when the parent was cancelled")
	}
	if !errors.Is(c.Err(), context.Canceled) {
		t.Errorf("Err = %v, want Canceled", c.Err())
	}
	// A context derived from it by the tool ends with it.
	child, stop := context.WithCancel(c)
	defer stop()
	<-child.Done()
}

func TestDeadlineCtxReleaseEndsDerivedContexts(t *testing.T) {
	c := withDeadline(context.Background(), time.Now().Add(time.Hour))
	child, stop := context.WithTimeout(c, time.Hour)
	defer stop()
	c.release()
	select {
	case <-child.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a derived context outlived the call")
	}
}

type ctxKey struct{}

// The engine's alarms end each watched context at its own deadline, in any
// order of adding, and never one that was released first.
func TestAlarmsEndEachContextAtItsDeadline(t *testing.T) {
	var a alarms
	now := time.Now()
	var kept, released []*deadlineCtx
	for i, ms := range []int{50, 10, 30, 20, 60, 40, 15, 5} {
		c := withDeadline(context.Background(), now.Add(time.Duration(ms)*time.Millisecond))
		c.watch(&a)
		if i%3 == 2 {
			released = append(released, c)
		} else {
			kept = append(kept, c)
		}
	}
	for _, c := range released {
		c.release()
	}
	for _, c := range kept {
		select {
		case <-c.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("the context due at %s did not end", c.deadline.Sub(now))
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded", c.Err())
		}
		if time.Now().Before(c.deadline) {
			t.Errorf("the context due at %s ended early", c.deadline.Sub(now))
		}
	}
	for _, c := range released {
		if !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("a released context ended with %v, want Canceled", c.Err())
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.heap) != 0 {
		t.Errorf("%d contexts left in the alarms", len(a.heap))
	}
}

// A context that Err ended before anyone asked for its channel (a tool that
// polls Err, on its worker, before the engine watches it) hands the engine a
// closed channel, not one nothing will ever close.
func TestDeadlineCtxWatchAfterErr(t *testing.T) {
	c := withDeadline(context.Background(), time.Now().Add(-time.Second))
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("Err = %v, want DeadlineExceeded", c.Err())
	}
	var a alarms
	select {
	case <-c.watch(&a):
	default:
		t.Fatal("watch returned an open channel for a context that has ended")
	}
	c.release()
}

// A context derived from a call's context (context.WithCancel, as an MCP
// call makes one) finds AfterFunc: it costs no goroutine waiting for the
// call's context to end, and none at the end of the call once the derived
// context was cancelled first; the call's deadline is watched by the
// engine's alarms, not a timer of its own.
func TestDeadlineCtxDerivingCostsNoGoroutine(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()
	var a alarms
	const n = 100
	before := runtime.NumGoroutine()
	var ctxs []*deadlineCtx
	for range n {
		c := withDeadline(parent, time.Now().Add(time.Hour))
		c.engine = &a
		child, cancel := context.WithCancel(c)
		_ = child
		cancel()
		ctxs = append(ctxs, c)
	}
	if grew := runtime.NumGoroutine() - before; grew >= n/2 {
		t.Errorf("%d contexts derived from call contexts left %d goroutines", n, grew)
	}
	for _, c := range ctxs {
		if c.timer != nil {
			t.Fatal("a derived context made the call's context start a timer of its own")
		}
		c.release()
	}
	if grew := runtime.NumGoroutine() - before; grew >= n/2 {
		t.Errorf("releasing %d call contexts whose derived contexts had ended started %d goroutines", n, grew)
	}
	a.mu.Lock()
	left := len(a.heap)
	a.mu.Unlock()
	if left != 0 {
		t.Errorf("%d released contexts are still in the alarms", left)
	}
}

// A derived context still ends with the call's: at its deadline (through
// the engine's alarms), when the caller's context ends, and at release.
func TestDeadlineCtxDerivedEndsWithIt(t *testing.T) {
	wait := func(t *testing.T, child context.Context, want error) {
		t.Helper()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the derived context did not end")
		}
		if !errors.Is(child.Err(), want) {
			t.Errorf("derived context's Err = %v, want %v", child.Err(), want)
		}
	}
	t.Run("deadline", func(t *testing.T) {
		var a alarms
		c := withDeadline(context.Background(), time.Now().Add(30*time.Millisecond))
		c.engine = &a
		defer c.release()
		child, cancel := context.WithCancel(c)
		defer cancel()
		wait(t, child, context.DeadlineExceeded)
	})
	t.Run("parent", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.Background())
		c := withDeadline(parent, time.Now().Add(time.Hour))
		c.engine = &alarms{}
		defer c.release()
		child, cancel := context.WithCancel(c)
		defer cancel()
		cancelParent()
		wait(t, child, context.Canceled)
	})
	t.Run("release", func(t *testing.T) {
		c := withDeadline(context.Background(), time.Now().Add(time.Hour))
		c.engine = &alarms{}
		child, cancel := context.WithCancel(c)
		defer cancel()
		c.release()
		wait(t, child, context.Canceled)
	})
	t.Run("watched too", func(t *testing.T) {
		// The engine's wait on a call (watch) after a derived context
		// was made: the deadline is in the alarms once, and still ends both.
		var a alarms
		c := withDeadline(context.Background(), time.Now().Add(300*time.Millisecond))
		c.engine = &a
		defer c.release()
		child, cancel := context.WithCancel(c)
		defer cancel()
		done := c.watch(&a)
		a.mu.Lock()
		n := len(a.heap)
		a.mu.Unlock()
		if n != 1 {
			t.Errorf("the context is in the alarms %d times", n)
		}
		wait(t, child, context.DeadlineExceeded)
		<-done
	})
	t.Run("ended already", func(t *testing.T) {
		c := withDeadline(context.Background(), time.Now().Add(-time.Millisecond))
		c.engine = &alarms{}
		defer c.release()
		child, cancel := context.WithCancel(c)
		defer cancel()
		wait(t, child, context.DeadlineExceeded)
	})
}

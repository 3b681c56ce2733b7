package lathe

import (
	"context"
	"errors"
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

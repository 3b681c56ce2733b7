package lathe

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is a context with a deadline whose timer is made only when
// somebody asks for its Done channel. A tool that finishes without waiting on
// its context (most builtin calls) then costs no timer at all: the stdlib's
// context.WithTimeout spends more on its timer than the engine spends on the
// rest of a call's pipeline. Err reads the clock, so the deadline holds for
// code that polls Err instead of waiting on Done.
//
// The contract of context.Context holds: once Err returns an error, Done is
// closed; Done closes at the deadline, when the parent ends, or at release.
type deadlineCtx struct {
	context.Context // the parent: Value and the parent's cancellation
	deadline        time.Time

	mu    sync.Mutex
	done  chan struct{} // made by the first Done
	err   error         // set once, when the context ends
	timer *time.Timer   // the deadline's timer, once Done was asked for
	stop  func() bool   // stops watching the parent, once Done was asked for
}

func withDeadline(parent context.Context, d time.Time) *deadlineCtx {
	return &deadlineCtx{Context: parent, deadline: d}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		return c.done
	}
	c.done = make(chan struct{})
	if c.err != nil {
		// It ended before anyone asked for Done.
		close(c.done)
		return c.done
	}
	if c.checkLocked() != nil {
		return c.done // checkLocked closed it
	}
	c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	c.stop = context.AfterFunc(c.Context, func() { c.end(c.Context.Err()) })
	return c.done
}

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checkLocked()
}

// checkLocked ends the context if its parent ended or its deadline passed,
// and returns its error.
func (c *deadlineCtx) checkLocked() error {
	if c.err == nil {
		if err := c.Context.Err(); err != nil {
			c.endLocked(err)
		} else if !time.Now().Before(c.deadline) {
			c.endLocked(context.DeadlineExceeded)
		}
	}
	return c.err
}

func (c *deadlineCtx) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endLocked(err)
}

func (c *deadlineCtx) endLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

// release ends the context as a cancel function does, when the call is over,
// and stops its timer and its watch of the parent.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stop != nil {
		c.stop()
	}
	c.endLocked(context.Canceled)
}

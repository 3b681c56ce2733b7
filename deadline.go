package lathe

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is a context with a deadline that is watched only when
// somebody asks for its Done channel (or derives a context from it), and
// then, for a call's context, by the engine's alarms rather than a timer of
// its own. A tool that finishes without waiting on
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
	done  chan struct{} // made by the first Done, or by watch
	err   error         // set once, when the context ends
	timer *time.Timer   // the deadline's timer, once Done was asked for
	stop  func() bool   // stops watching the parent, once Done was asked for

	alarms *alarms // the engine's alarms, which end it at its deadline, once watched
	slot   int     // its index in alarms.heap, -1 when not in it; guarded by alarms.mu
	// engine is the engine's alarms, for AfterFunc; nil outside an engine,
	// where AfterFunc falls back on a timer of the context's own.
	engine *alarms

	afters []*after // functions to run when it ends (AfterFunc)

	inv *Invocation // the call it runs, for RecordOperation
}

// Value answers for the call's invocation itself, so that the engine need
// not wrap the context once more to carry it.
func (c *deadlineCtx) Value(key any) any {
	if _, ok := key.(invocationKey); ok && c.inv != nil {
		return c.inv
	}
	return c.Context.Value(key)
}

func withDeadline(parent context.Context, d time.Time) *deadlineCtx {
	return &deadlineCtx{Context: parent, deadline: d, slot: -1}
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *deadlineCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done != nil {
		// Made by an earlier Done, or by watch: either way something ends
		// it at the deadline, at release, and (for watch) the engine
		// returns at the parent's end, which releases it.
		return c.done
	}
	if c.makeDoneLocked() {
		return c.done
	}
	c.watchDeadlineLocked()
	if c.stop == nil {
		c.stop = context.AfterFunc(c.Context, func() { c.end(c.Context.Err()) })
	}
	return c.done
}

// makeDoneLocked makes the Done channel, for Done and for watch, and
// reports whether the context has ended, in which case the channel is
// closed already and nothing need watch it.
func (c *deadlineCtx) makeDoneLocked() bool {
	c.done = make(chan struct{})
	if c.err != nil {
		// It ended before anyone asked for the channel.
		close(c.done)
		return true
	}
	return c.checkLocked() != nil // which closed it
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
	for _, a := range c.afters {
		if a.state == afterWaiting {
			a.state = afterRan
			go a.f()
		}
	}
	c.afters = nil
}

// watchDeadlineLocked makes sure something ends c at its deadline: the
// engine's alarms when c is a call's, else a timer of its own. It is done
// under c.mu, so that release cannot come between; the alarms' lock is
// never held while a context's is taken.
func (c *deadlineCtx) watchDeadlineLocked() {
	switch {
	case c.timer != nil || c.alarms != nil:
	case c.engine != nil:
		c.alarms = c.engine
		c.alarms.add(c)
	default:
		c.timer = time.AfterFunc(time.Until(c.deadline), func() { c.end(context.DeadlineExceeded) })
	}
}

// after is a function AfterFunc runs when the context ends.
type after struct {
	f     func()
	state int // guarded by the context's mu
}

const (
	afterWaiting = iota
	afterRan
	afterStopped
)

// AfterFunc arranges for f to run in a goroutine of its own once c ends, as
// context.AfterFunc does, and returns a function that stops that if it has
// not happened yet. The context package looks for this method on a parent
// when a context is derived from it: without it, every
// context.WithCancel(ctx) of a runtime (an MCP call makes one) would cost a
// goroutine that waits for c to end, and waking it again at the end of the
// call. The deadline is watched by the engine's alarms, as for watch, not
// by a timer of c's own.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.checkLocked() != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &after{f: f}
	c.afters = append(c.afters, a)
	c.watchDeadlineLocked()
	if c.stop == nil {
		// The parent's end ends c, and so reaches f.
		c.stop = context.AfterFunc(c.Context, func() { c.end(c.Context.Err()) })
	}
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if a.state != afterWaiting {
			return false
		}
		a.state = afterStopped
		return true
	}
}

// watch makes the Done channel without a timer of its own and hands the
// deadline to the engine's alarms, one timer for every call, which end the
// context when it passes. The caller waits on the channel and on the
// parent's Done: the parent's end is not forwarded, since the wait returns
// and releases the context then.
func (c *deadlineCtx) watch(a *alarms) <-chan struct{} {
	c.mu.Lock()
	if c.done != nil {
		c.mu.Unlock()
		return c.done
	}
	if c.makeDoneLocked() || c.alarms != nil || c.timer != nil {
		// Ended, or its deadline is watched already (AfterFunc).
		c.mu.Unlock()
		return c.done
	}
	c.alarms = a
	c.mu.Unlock()
	a.add(c)
	return c.done
}

// release ends the context as a cancel function does, when the call is over,
// and stops its timer and its watch of the parent.
func (c *deadlineCtx) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.alarms != nil {
		c.alarms.remove(c)
	}
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.stop != nil {
		c.stop()
	}
	c.endLocked(context.Canceled)
}

// alarms ends the watched deadline contexts of an engine at their deadlines,
// with one timer for all of them, armed for the earliest. A call's timer of
// its own (time.AfterFunc) costs more than the rest of a builtin call's
// pipeline when most calls end long before their deadline; adding to and
// removing from a heap under a lock costs little, and since most deadlines
// are "now plus the same timeout", a new one rarely rearms the timer.
type alarms struct {
	mu    sync.Mutex
	heap  []*deadlineCtx // a min-heap by deadline
	timer *time.Timer
	at    time.Time // when the timer fires; zero when it is not armed
}

func (a *alarms) add(c *deadlineCtx) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c.slot = len(a.heap)
	a.heap = append(a.heap, c)
	a.up(c.slot)
	if a.at.IsZero() || c.deadline.Before(a.at) {
		a.at = c.deadline
		if a.timer == nil {
			a.timer = time.AfterFunc(time.Until(c.deadline), a.ring)
		} else {
			a.timer.Reset(time.Until(c.deadline))
		}
	}
}

// remove takes c out of the heap, if it is still there. The timer is left
// as it is: if it was armed for c, it fires early, finds nothing due and
// rearms for the next deadline.
func (a *alarms) remove(c *deadlineCtx) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if i := c.slot; i >= 0 && i < len(a.heap) && a.heap[i] == c {
		a.removeAt(i)
	}
}

// ring ends every context whose deadline has passed and rearms the timer
// for the next one.
func (a *alarms) ring() {
	a.mu.Lock()
	now := time.Now()
	var due []*deadlineCtx
	for len(a.heap) > 0 && !now.Before(a.heap[0].deadline) {
		due = append(due, a.heap[0])
		a.removeAt(0)
	}
	a.at = time.Time{}
	if len(a.heap) > 0 {
		a.at = a.heap[0].deadline
		a.timer.Reset(time.Until(a.at))
	}
	a.mu.Unlock()
	// Outside the lock: a context's own lock is never taken under it.
	for _, c := range due {
		c.end(context.DeadlineExceeded)
	}
}

func (a *alarms) removeAt(i int) {
	last := len(a.heap) - 1
	a.heap[i].slot = -1
	if i != last {
		a.heap[i] = a.heap[last]
		a.heap[i].slot = i
	}
	a.heap[last] = nil
	a.heap = a.heap[:last]
	if i < last {
		a.down(i)
		a.up(i)
	}
}

func (a *alarms) less(i, j int) bool { return a.heap[i].deadline.Before(a.heap[j].deadline) }

func (a *alarms) swap(i, j int) {
	a.heap[i], a.heap[j] = a.heap[j], a.heap[i]
	a.heap[i].slot, a.heap[j].slot = i, j
}

func (a *alarms) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !a.less(i, p) {
			return
		}
		a.swap(i, p)
		i = p
	}
}

func (a *alarms) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(a.heap) {
			return
		}
		m := l
		if r := l + 1; r < len(a.heap) && a.less(r, l) {
			m = r
		}
		if !a.less(m, i) {
			return
		}
		a.swap(i, m)
		i = m
	}
}

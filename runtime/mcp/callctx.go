package mcp

import (
	"context"
	"sync"
)

// callCtx is the context a client's request to a server is made with
// (begin): the request's own, which also names it (inflightKey) and ends
// early, cancelled, when the request must end with a question (abort).
//
// It does what context.WithCancel and context.WithValue would, for less
// on the path of every call: a context derived with WithCancel registers
// with its parent at once, and a call's context (the engine's deadline
// context) then starts watching its deadline and its own parent for it.
// callCtx does that only when something asks for its Done channel (or
// derives a context from it): the SDK's paths. The direct path
// (directConn.call) waits on the parent's Done and on abort instead, and
// a call that never ends with a question costs no registration beyond
// its parent's.
type callCtx struct {
	context.Context // the request's context: its deadline, values and end

	// id is the request's, answered for inflightKey; set by track before
	// the context is handed out.
	id uint64

	mu sync.Mutex
	// aborted is closed by abort; err is then context.Canceled.
	aborted chan struct{}
	err     error
	// inner is the context.WithCancel of the parent that Done hands out,
	// made when first asked for; cancel ends it at abort.
	inner  context.Context
	cancel context.CancelFunc
}

func newCallCtx(parent context.Context) *callCtx {
	return &callCtx{Context: parent, aborted: make(chan struct{})}
}

func (c *callCtx) Value(key any) any {
	if _, ok := key.(inflightKey); ok {
		return c.id
	}
	return c.Context.Value(key)
}

// Done returns a channel closed when the parent ends or at abort, whichever
// comes first.
func (c *callCtx) Done() <-chan struct{} { return c.made().Done() }

// made returns the context.WithCancel of the parent that stands for c's
// end, made when first asked for.
func (c *callCtx) made() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithCancel(c.Context)
		if c.err != nil {
			c.cancel()
		}
	}
	return c.inner
}

// AfterFunc is what the context package looks for on a parent: a context
// derived from c registers with the context Done stands for, as it would
// with a context.WithCancel's, rather than wait for c's end on a goroutine
// of its own.
func (c *callCtx) AfterFunc(f func()) (stop func() bool) { return context.AfterFunc(c.made(), f) }

// Err is context.Canceled after abort, else the parent's error. Once the
// parent has ended, the channel Done handed out is closed before Err
// returns, though the parent's news of its end may come a moment later.
func (c *callCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	err := c.Context.Err()
	if err != nil && c.cancel != nil {
		c.cancel()
	}
	return err
}

// abort ends the request, cancelled; once done, it does nothing.
func (c *callCtx) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = context.Canceled
	close(c.aborted)
	if c.cancel != nil {
		c.cancel()
	}
}

// release ends the context, cancelled, once the request is over, and lets
// go of what Done made.
func (c *callCtx) release() { c.abort() }

// ends returns what says ctx ended: its Done channel, or for a callCtx, its
// parent's and its abort's, which cost no registration.
func ends(ctx context.Context) (done, aborted <-chan struct{}) {
	if c, ok := ctx.(*callCtx); ok {
		return c.Context.Done(), c.aborted
	}
	return ctx.Done(), nil
}

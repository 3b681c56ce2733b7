package lathe

import (
	"sync"
	"time"
)

// maxIdleWorkers bounds the goroutines kept waiting for calls, per engine.
const maxIdleWorkers = 32

// workerIdle is how long a worker may wait for another call before the next
// worker that turns idle ends it, so that a burst of calls does not leave its
// goroutines behind for the life of the engine.
const workerIdle = 10 * time.Second

// workers runs calls that must not hold their caller past the deadline on
// goroutines kept between calls. A goroutine of its own per call cost more
// than the rest of a builtin call's pipeline: a new goroutine starts with a
// small stack, which JSON decoding grows, by copying it, several times over.
// A kept worker has grown its stack once. Idle workers wait on their channel
// alone, with no timer: a timer set each time a worker turns idle would cost
// every call; the oldest idle worker is ended instead when another turns idle
// long after it, and all of them when the engine closes.
type workers struct {
	mu     sync.Mutex
	idle   []*worker // oldest first; the most recently idle, with its stack and caches warm, is used first
	closed bool
}

type worker struct {
	jobs  chan func() // one job at a time; nil ends the worker
	since time.Time   // when it last turned idle
}

// run runs fn on an idle worker, or on a new one.
func (p *workers) run(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.jobs <- fn
		return
	}
	p.mu.Unlock()
	w := &worker{jobs: make(chan func(), 1)}
	go w.loop(p, fn)
}

func (w *worker) loop(p *workers, fn func()) {
	for fn != nil {
		fn()
		if !p.put(w) {
			return
		}
		fn = <-w.jobs
	}
}

// put makes w idle, unless enough are or the engine is closed, and ends the
// oldest idle worker if it has waited longer than workerIdle.
func (p *workers) put(w *worker) bool {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleWorkers {
		return false
	}
	if len(p.idle) > 0 && now.Sub(p.idle[0].since) > workerIdle {
		p.idle[0].jobs <- nil
		p.idle = append(p.idle[:0], p.idle[1:]...)
	}
	w.since = now
	p.idle = append(p.idle, w)
	return true
}

// close ends the idle workers; busy ones end when their call returns.
func (p *workers) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		w.jobs <- nil
	}
	p.idle = nil
}

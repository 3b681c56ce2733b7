package lathe

import (
	"sync"
	"time"
)

// maxIdleWorkers bounds the goroutines kept waiting for calls, per engine.
const maxIdleWorkers = 32

// workerIdle is how long a worker waits for another call before it ends, so
// that an engine nobody closes does not keep its goroutines for ever.
const workerIdle = 10 * time.Second

// workers runs calls that must not hold their caller past the deadline on
// goroutines kept between calls. A goroutine of its own per call cost more
// than the rest of a builtin call's pipeline: a new goroutine starts with a
// small stack, which JSON decoding grows, by copying it, several times over.
// A kept worker has grown its stack once.
type workers struct {
	mu     sync.Mutex
	idle   []*worker // most recently idle last: its stack and caches are warm
	closed bool
}

type worker struct {
	jobs  chan func() // one job at a time; nil ends the worker
	timer *time.Timer
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
		fn = nil
		if !p.put(w) {
			return
		}
		if w.timer == nil {
			w.timer = time.NewTimer(workerIdle)
		} else {
			w.timer.Reset(workerIdle)
		}
		select {
		case fn = <-w.jobs:
			w.timer.Stop()
		case <-w.timer.C:
			if !p.take(w) {
				// Handed a job as the timer fired: do it.
				fn = <-w.jobs
			}
		}
	}
}

// put makes w idle, unless enough are or the engine is closed.
func (p *workers) put(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle) >= maxIdleWorkers {
		return false
	}
	p.idle = append(p.idle, w)
	return true
}

// take removes w from the idle workers, and reports whether it was there (a
// worker no longer there has been handed a job).
func (p *workers) take(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return true
		}
	}
	return false
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

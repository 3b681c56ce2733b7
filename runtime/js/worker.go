package js

// Engines run on goroutines kept between calls. The engine is C compiled to
// Go and needs a deep stack: a goroutine started for each call begins with a
// small stack and grows it by copying, several times, while it starts the
// engine, which cost a quarter of a warm call (BenchmarkJSTool in bench/,
// docs/benchmarks.md). A kept goroutine's stack has grown already. Only the
// goroutine is kept: every call still starts a fresh engine and closes it
// before the goroutine takes the next call, so nothing of one call's
// JavaScript reaches another.

// maxIdleEngineGoroutines bounds the goroutines kept waiting for a call;
// a burst of concurrent calls starts more, which end once they find the
// pool full. Each holds its grown stack (tens of KiB) while it waits.
const maxIdleEngineGoroutines = 8

// idleEngineGoroutines holds the job channels of the goroutines waiting for
// a call.
var idleEngineGoroutines = make(chan chan func(), maxIdleEngineGoroutines)

// goEngine runs f on a kept goroutine, or on a new one when none is idle.
// It never blocks.
func goEngine(f func()) {
	select {
	case jobs := <-idleEngineGoroutines:
		jobs <- f
	default:
		jobs := make(chan func(), 1)
		jobs <- f
		go engineGoroutine(jobs)
	}
}

// engineGoroutine runs the jobs it is given, one at a time, and waits in
// the pool between them; it ends when the pool is full.
func engineGoroutine(jobs chan func()) {
	for f := range jobs {
		f()
		select {
		case idleEngineGoroutines <- jobs:
		default:
			return
		}
	}
}

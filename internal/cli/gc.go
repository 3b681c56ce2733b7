package cli

import (
	"os"
	"runtime"
	"runtime/debug"
)

// serveGCPercent is the garbage collector's target for lathe serve: the
// heap may grow to five times what is live before a collection, where Go's
// default lets it double. A proxied MCP call allocates about 300 KB that is
// garbage at once (the MCP SDK decodes every message with a fresh 32 KB
// buffer) while the server's live heap stays at a few megabytes, so with
// the default a collection ran every dozen calls and took a third of the
// server's processor time (docs/benchmarks.md, "The gateway path"). The
// price is memory: about 12 MB more at the peak in that benchmark.
const serveGCPercent = 400

// tuneGC sets the collector's target for a long-running server, unless the
// person running lathe chose one with GOGC.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
}

// serveProcs is how many threads lathe serve runs Go code on at once: half
// the processors Go found (at least one). A gateway's work per call is small
// and mostly waiting: each call hands off between goroutines several times
// (the HTTP connection's, the upstream's reader, the event subscribers),
// and with a processor idle for each hand-off Go wakes a thread that looks
// for work and sleeps again, which cost about a quarter of lathe serve's
// processor time per proxied call on a two-processor machine. The
// upstream servers lathe starts, and often its clients, run on the same
// machine and want the other half. With half, on the project's
// two-processor machine, a proxied call took 0.74–0.83× the processor time
// and lathe served 1.11–1.20× the calls per second in sequence
// (docs/benchmarks.md, "The gateway path").
func serveProcs(available int) int { return max(1, available/2) }

// tuneProcs sets the threads of a long-running server (serveProcs), unless
// the person running lathe chose them with GOMAXPROCS.
func tuneProcs() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(serveProcs(runtime.GOMAXPROCS(0)))
	}
}

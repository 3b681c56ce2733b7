package cli

import (
	"os"
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

package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// lathe serve raises the collector's target, unless GOGC chose one.
func TestTuneGC(t *testing.T) {
	old := debug.SetGCPercent(100)
	defer debug.SetGCPercent(old)

	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	tuneGC()
	if got := debug.SetGCPercent(100); got != serveGCPercent {
		t.Errorf("without GOGC: the collector's target is %d, want %d", got, serveGCPercent)
	}

	t.Setenv("GOGC", "100")
	tuneGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC=100: the collector's target is %d, want 100 (the person's choice)", got)
	}
}

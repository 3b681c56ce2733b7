package cli

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/config"
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

// lathe serve runs Go code on half the processors, unless GOMAXPROCS chose.
func TestTuneProcs(t *testing.T) {
	for available, want := range map[int]int{1: 1, 2: 1, 3: 1, 4: 2, 64: 32} {
		if got := serveProcs(available); got != want {
			t.Errorf("serveProcs(%d) = %d, want %d", available, got, want)
		}
	}
	old := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(old)

	runtime.GOMAXPROCS(4)
	t.Setenv("GOMAXPROCS", "")
	os.Unsetenv("GOMAXPROCS")
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("without GOMAXPROCS, of 4: %d, want 2", got)
	}

	runtime.GOMAXPROCS(4)
	t.Setenv("GOMAXPROCS", "4")
	tuneProcs()
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Errorf("with GOMAXPROCS=4: %d, want 4 (the person's choice)", got)
	}
}

// lathe serve takes the bounds on calls waiting between rounds from
// [serve], each to its own field.
func TestRoundOptions(t *testing.T) {
	got := roundOptions(config.Serve{RoundWait: 3 * time.Minute, MaxWaitingPerClient: 5, MaxWaiting: 70})
	if got.Wait != 3*time.Minute || got.MaxPerClient != 5 || got.MaxWaiting != 70 {
		t.Errorf("round options %+v", got)
	}
}

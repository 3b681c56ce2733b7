package load_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTemporalSDK: the loader and the engine reach the workers of a
// queue through the Dispatcher hook, so that a program that routes nothing
// does not compile the Temporal SDK (only package runtime/temporal, which
// the lathe command fills the hook with, imports it).
func TestNoTemporalSDK(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".", "..").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list named too few packages to be believed:\n%s", out)
	}
	for _, p := range pkgs {
		if strings.Contains(p, "go.temporal.io") || strings.HasSuffix(p, "/runtime/temporal") {
			t.Errorf("package load or lathe imports %s", p)
		}
	}
}

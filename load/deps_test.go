package load_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTemporalSDK: the loader, the engine and the embeddable command line
// (package cli) reach the workers of a queue through hooks (the loader's
// Dispatcher, the command line's SetDispatch), so that a program that
// routes nothing does not compile the Temporal SDK: only package
// runtime/temporal imports it, and cli/temporalcli, which lathe's own
// command imports to fill the hooks.
func TestNoTemporalSDK(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".", "..", "../cli").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 10 {
		t.Fatalf("go list named too few packages to be believed:\n%s", out)
	}
	for _, p := range pkgs {
		if strings.Contains(p, "go.temporal.io") || strings.HasSuffix(p, "/runtime/temporal") {
			t.Errorf("package load, lathe or cli imports %s", p)
		}
	}
}

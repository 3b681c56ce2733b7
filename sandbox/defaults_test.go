package sandbox_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestSystemPathsCannotBeWidened is the attack of a package that a program
// imports and that wants every sandbox of the program to see the host's
// secrets: it rewrites the system paths it is given to the root directory.
// What the sandbox exposes must not change.
func TestSystemPathsCannotBeWidened(t *testing.T) {
	want := sandbox.SystemPaths()
	if !slices.Contains(want, "/usr") || slices.Contains(want, "/etc") {
		t.Fatalf("SystemPaths() = %q, want /usr and not the whole of /etc", want)
	}
	got := sandbox.SystemPaths()
	for i := range got {
		got[i] = "/"
	}
	if again := sandbox.SystemPaths(); !slices.Equal(again, want) {
		t.Fatalf("after changing its result, SystemPaths() = %q, want %q", again, want)
	}

	requireStandard(t)
	ws, _ := fixture(t)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	out, err := run(t, cfg, markStart("cat /etc/shadow"))
	if !ran(out) {
		t.Fatalf("the script did not run: %s", outputTail(out))
	}
	if err == nil || strings.Contains(out, "root:") {
		t.Fatalf("/etc/shadow was readable in the sandbox after its system paths were changed: %v %s", err, outputTail(out))
	}
}

// TestDefaultLimits checks that a zero Limits gets DefaultLimits, and that
// changing the value DefaultLimits returned does not raise them.
func TestDefaultLimits(t *testing.T) {
	d := sandbox.DefaultLimits()
	if d.Wall <= 0 || d.Memory <= 0 || d.CPU <= 0 || d.Processes <= 0 || d.Output <= 0 || d.FileSize <= 0 {
		t.Fatalf("DefaultLimits() = %+v, want every limit set", d)
	}
	if got := (sandbox.Limits{}).WithDefaults(); got != d {
		t.Fatalf("Limits{}.WithDefaults() = %+v, want DefaultLimits() %+v", got, d)
	}
	raised := sandbox.DefaultLimits()
	raised.Processes, raised.Memory = 1<<30, 1<<62
	if got := (sandbox.Limits{}).WithDefaults(); got != d {
		t.Fatalf("after changing a result of DefaultLimits, Limits{}.WithDefaults() = %+v, want %+v", got, d)
	}
}

//go:build linux

package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestNoWorkspace runs a command that tries the workspace's files with and
// without NoWorkspace: given the workspace it reads them (so the attack is
// real), withheld it sees neither them nor the workspace directory, works
// in an empty private directory, and still reads the one file it was given.
func TestNoWorkspace(t *testing.T) {
	requireStandard(t)
	testNoWorkspace(t, sandbox.Standard)
}

// TestNoWorkspaceHardened is TestNoWorkspace under gVisor.
func TestNoWorkspaceHardened(t *testing.T) {
	requireHardened(t)
	testNoWorkspace(t, sandbox.Hardened)
}

func testNoWorkspace(t *testing.T, profile sandbox.Profile) {
	ws, outside := fixture(t)
	secret := filepath.Join(ws, "secret.txt")
	if err := os.WriteFile(secret, []byte("WORKSPACE-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(outside, "given.txt")
	if err := os.WriteFile(given, []byte("GIVEN\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := markStart("cat " + secret + "; ls -a " + ws + "; echo cwd=$(pwd) entries=$(ls -A); cat " + given +
		"; cat " + filepath.Join(outside, "secret.txt"))

	open := sandbox.Config{Profile: profile, Workspace: ws, Perms: sandbox.Permissions{Read: []string{given}}}
	out, _ := run(t, open, script)
	if !ran(out) || !strings.Contains(out, "WORKSPACE-SECRET") {
		t.Fatalf("with the workspace the command could not read it, so the test proves nothing; output:\n%s", out)
	}

	closed := open
	closed.NoWorkspace = true
	out, _ = run(t, closed, script)
	switch {
	case !ran(out):
		t.Fatalf("the command did not run; output:\n%s", out)
	case strings.Contains(out, "WORKSPACE-SECRET") || strings.Contains(out, "TOPSECRET"):
		t.Errorf("without a workspace the command read a file of it; output:\n%s", out)
	case strings.Contains(out, "link") || strings.Contains(out, "dirlink"):
		t.Errorf("without a workspace the command listed it; output:\n%s", out)
	case !strings.Contains(out, "cwd=/tmp entries="+inTmp(given)+"\n"):
		t.Errorf("the working directory is not an empty /tmp (but for the way to the file given); output:\n%s", out)
	case !strings.Contains(out, "GIVEN"):
		t.Errorf("the file the command was given is not readable; output:\n%s", out)
	}
	// The same shape twice reuses its template: a second run sees the
	// same nothing, and not the first run's /tmp.
	out2, _ := run(t, closed, markStart("touch /tmp/left"))
	out3, _ := run(t, closed, markStart("ls -A /tmp"))
	if !ran(out2) || !ran(out3) || strings.Contains(out3, "left") {
		t.Errorf("one run's private directory reached the next; outputs:\n%s\n%s", out2, out3)
	}
}

// TestNoWorkspaceRefusesDev: a dev run is a host process, which can open
// any file of lathe's user; asked to withhold the workspace, Wrap refuses
// rather than pretend.
func TestNoWorkspaceRefusesDev(t *testing.T) {
	cmd := exec.Command("/bin/true")
	cleanup, err := sandbox.Config{Profile: sandbox.Dev, NoWorkspace: true}.Wrap(cmd)
	cleanup()
	if err == nil || !strings.Contains(err.Error(), "cannot withhold the workspace") {
		t.Fatalf("Wrap(dev, NoWorkspace) = %v, want a refusal", err)
	}
	if cmd.Path != "/bin/true" {
		t.Errorf("the refused command was rewritten to %s", cmd.Path)
	}
}

// inTmp returns what the listing of a run's /tmp shows of path p: the
// first element of p below /tmp, since the way to a file given
// under /tmp is kept there; "" for a path elsewhere.
func inTmp(p string) string {
	rest, ok := strings.CutPrefix(p, "/tmp/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	return first
}

//go:build linux && !cgo

package sandbox_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestWithoutCgo checks that a binary built without the C init refuses the
// profiles that need it, saying why, rather than running the command
// unconfined.
func TestWithoutCgo(t *testing.T) {
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		cmd := exec.Command("/bin/true")
		cleanup, err := sandbox.Config{Profile: p, Workspace: t.TempDir()}.Wrap(cmd)
		cleanup()
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "cgo") {
			t.Errorf("%s without cgo: got %v, want ErrUnavailable naming cgo", p, err)
		}
		if cmd.Path != "/bin/true" {
			t.Errorf("%s: the command was rewritten to %s although it cannot run", p, cmd.Path)
		}
	}
}

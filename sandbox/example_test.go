//go:build linux && amd64 && cgo

package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/lathe-tools/lathe/sandbox"
)

// Run a command line in a workspace under the standard profile: a private
// root holding the system directories and the workspace, no network, the
// default limits.
func ExampleConfig_Wrap() {
	ws, _ := os.MkdirTemp("", "ws")
	defer os.RemoveAll(ws)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	cmd := exec.Command("/bin/sh", "-c", "echo hello > note.txt; cat note.txt; ls /home 2>&1 | head -c 11")
	cmd.Env = cfg.Env()
	cleanup, err := cfg.Wrap(cmd)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cleanup()
	out, _ := cmd.Output()
	fmt.Printf("%s\n", out)
	// Output:
	// hello
	// ls: cannot
}

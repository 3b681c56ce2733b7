package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
)

// Grants live outside the workspace, per workspace: here in a temporary
// state directory; lathe uses [audit.DefaultGrantDir].
func ExampleOpenGrants() {
	root, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(root)
	ws := filepath.Join(root, "project")
	os.Mkdir(ws, 0o755)
	grants, err := audit.OpenGrants(filepath.Join(root, "state", "lathe", "grants"), ws)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	grants.AddGrant(ctx, policy.Grant{Tool: "run_command", Command: "git log"})
	ok, _ := grants.Granted(ctx, "run_command", "git log")
	fmt.Println("git log:", ok)
	ok, _ = grants.Granted(ctx, "run_command", "rm -rf ~")
	fmt.Println("rm -rf ~:", ok)

	// A grants directory inside the workspace is refused.
	_, err = audit.OpenGrants(filepath.Join(ws, ".lathe", "grants"), ws)
	fmt.Println(err != nil)
	// Output:
	// git log: true
	// rm -rf ~: false
	// true
}

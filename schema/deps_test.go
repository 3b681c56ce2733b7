package schema_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestValidationDoesNotCompileInference: the engine and this package only
// validate, and must not make their importers compile the reflection
// library that schema inference needs (schema/infer has it alone).
func TestValidationDoesNotCompileInference(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH: cannot list dependencies")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, pkg := range []string{"github.com/lathe-tools/lathe", "github.com/lathe-tools/lathe/schema"} {
		out, err := exec.CommandContext(ctx, goTool, "list", "-deps", pkg).CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("go list -deps %s did not finish in 2 minutes", pkg)
		}
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/lathe-tools/lathe/schema/infer" || strings.HasPrefix(dep, "github.com/invopop/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}

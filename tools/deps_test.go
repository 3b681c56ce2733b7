package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCgo: a program that wants only the file tools does not link the
// sandbox's C init, nor any other C of lathe's: package tools and what it
// imports have no cgo files of this module (run_command, which needs the
// sandbox, is package tools/command).
func TestNoCgo(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}} {{join .CgoFiles \",\"}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/lathe-tools/lathe"
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, cgo, _ := strings.Cut(line, " ")
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		seen++
		if path == module+"/sandbox" {
			t.Errorf("package tools imports %s", path)
		}
		if cgo != "" {
			t.Errorf("package tools imports %s, which has cgo files %s", path, cgo)
		}
	}
	if seen == 0 {
		t.Fatalf("go list named no package of %s:\n%s", module, out)
	}
}

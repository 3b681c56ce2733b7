package audit_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/audit"
)

// The directory Open creates for the database ignores itself in git; one
// that exists already is left as it is, and a .gitignore of the user's is
// never overwritten.
func TestOpenIgnoresItsDirectory(t *testing.T) {
	ws := t.TempDir()
	open := func(path string) {
		t.Helper()
		s, err := audit.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	open(filepath.Join(ws, ".lathe", "lathe.db"))
	b, err := os.ReadFile(filepath.Join(ws, ".lathe", ".gitignore"))
	if err != nil {
		t.Fatalf("no .gitignore in the new .lathe/: %v", err)
	}
	if !strings.Contains("\n"+string(b), "\n*\n") {
		t.Errorf(".lathe/.gitignore = %q, want a line *", b)
	}

	// git agrees: nothing of .lathe/ is untracked.
	if git, err := exec.LookPath("git"); err == nil {
		if out, err := exec.Command(git, "-C", ws, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		out, err := exec.Command(git, "-C", ws, "status", "--porcelain", "--untracked-files=all").CombinedOutput()
		if err != nil {
			t.Fatalf("git status: %v: %s", err, out)
		}
		if len(out) != 0 {
			t.Errorf("git status shows lathe's state:\n%s", out)
		}
	}

	// The user's own file stays as it is, opened again or in a new
	// directory where it was there first.
	mine := "lathe.db\n!keep.txt\n"
	if err := os.WriteFile(filepath.Join(ws, ".lathe", ".gitignore"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	open(filepath.Join(ws, ".lathe", "lathe.db"))
	if b, _ := os.ReadFile(filepath.Join(ws, ".lathe", ".gitignore")); string(b) != mine {
		t.Errorf("the user's .gitignore became %q", b)
	}

	// A directory that existed before is the user's: nothing is added.
	logs := filepath.Join(ws, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	open(filepath.Join(logs, "audit.db"))
	if _, err := os.Lstat(filepath.Join(logs, ".gitignore")); !os.IsNotExist(err) {
		t.Errorf("a .gitignore appeared in a directory lathe did not create: %v", err)
	}
}

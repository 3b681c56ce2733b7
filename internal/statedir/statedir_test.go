package statedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCreateFile: the first writer of a name wins, the second is told so
// and leaves the first's bytes and no temporary file behind.
func TestCreateFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := CreateFile(p, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(p, []byte("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second CreateFile: %v, want fs.ErrExist", err)
	}
	if b, err := ReadFile(p); err != nil || string(b) != "first" {
		t.Errorf("ReadFile: %q %v, want the first writer's bytes", b, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode: %v %v, want 0600", fi, err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("the directory holds %d entries, want the file alone", len(es))
	}
}

// TestOpenRefusesLink: Open does not follow a symbolic link.
func TestOpenRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("x"), 0o600)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if f, _, err := Open(link); !errors.Is(err, syscall.ELOOP) {
		if f != nil {
			f.Close()
		}
		t.Errorf("Open of a link: %v, want ELOOP", err)
	}
}

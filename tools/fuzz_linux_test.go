package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/lathe-tools/lathe/protect"
)

// FuzzResolve builds a random tree of directories, files and symbolic links
// (links that point up, out, at lathe's state, at the configuration, in
// loops, at nothing) from tree, resolves path in it, and checks:
//
//   - a resolved path is inside the root and never in .lathe;
//   - resolveChange never returns a protected path;
//   - where the kernel can open the path, it reaches the very file the
//     resolved path names (same device and inode), so Resolve judged what
//     an open would reach, and the tools' walk without links reaches it too.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{2, 0, 3, 1, 2, 1, 4, 0}, "b/secret")
	f.Add([]byte{0, 0, 2, 0, 2, 3}, "a/c")
	f.Add([]byte{2, 1, 5, 2, 2, 6}, "b/../x")
	f.Add([]byte{2, 2, 7, 2, 3, 8}, "c/d")
	f.Add([]byte{0, 1, 2, 4, 1, 2, 3}, "a/b/../../lathe.toml")
	f.Add([]byte{2, 0, 1, 0, 1, 2, 3, 4, 5}, "./a/./b")
	f.Add([]byte{}, ".lathe/lathe.db")
	f.Fuzz(func(t *testing.T, tree []byte, path string) {
		if len(tree) > 64 || len(path) > 256 || strings.IndexByte(path, 0) >= 0 {
			return
		}
		base, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		root := filepath.Join(base, "ws")
		build(t, base, root, tree)
		w, err := NewWorkspace(root)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()

		rel, err := w.Resolve(path)
		if err != nil {
			return
		}
		if rel != "." && !filepath.IsLocal(rel) {
			t.Fatalf("Resolve(%q) = %q, which is not inside the root", path, rel)
		}
		if protect.IsState(rel) {
			t.Fatalf("Resolve(%q) = %q, in the state directory", path, rel)
		}
		if crel, err := w.resolveChange(path); err == nil && protect.Is(crel) {
			t.Fatalf("resolveChange(%q) = %q, a protected path", path, crel)
		}

		// What the kernel reaches, where it reaches something.
		rootFd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(rootFd)
		fd, err := unix.Openat(rootFd, path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(fd)
		var kst unix.Stat_t
		if err := unix.Fstat(fd, &kst); err != nil {
			t.Fatal(err)
		}
		fi, err := w.lstat(rel)
		if err != nil {
			t.Fatalf("Resolve(%q) = %q, which the kernel opens but the walk without links cannot: %v", path, rel, err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Dev != kst.Dev || st.Ino != kst.Ino {
			real, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
			t.Fatalf("Resolve(%q) = %q, but the kernel reaches %s", path, rel, real)
		}
	})
}

// build lays out a tree under root from the bytes of tree, and beside it a
// directory "out" outside the root. Every entry is made of three bytes: a
// kind, a parent among the directories made so far and a name; a link takes
// a fourth, its target.
func build(t *testing.T, base, root string, tree []byte) {
	names := []string{"a", "b", "c", "d", ".lathe", "lathe.toml", "LATHE.TOML", "x"}
	targets := []string{
		".", "..", "../..", "a", "b", "a/b", ".lathe", "lathe.toml", "../lathe.toml", "../.lathe",
		"../../out", "../out", filepath.Join(base, "out"), filepath.Join(root, ".lathe"), root, "missing", "/", "b/../..",
	}
	for _, d := range []string{filepath.Join(root, ".lathe"), filepath.Join(base, "out")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(root, ".lathe", "lathe.db"), filepath.Join(base, "out", "secret"), filepath.Join(root, "lathe.toml")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dirs := []string{root}
	for len(tree) >= 3 {
		kind, parent, name := tree[0]%3, dirs[int(tree[1])%len(dirs)], names[int(tree[2])%len(names)]
		tree = tree[3:]
		p := filepath.Join(parent, name)
		switch kind {
		case 0:
			if os.Mkdir(p, 0o755) == nil {
				dirs = append(dirs, p)
			}
		case 1:
			os.WriteFile(p, []byte("x"), 0o644)
		case 2:
			if len(tree) == 0 {
				return
			}
			os.Symlink(targets[int(tree[0])%len(targets)], p)
			tree = tree[1:]
		}
	}
}

package load

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree makes the directories and files named under root ("a/b/", a trailing
// slash for a directory, "a/lathe.toml" for an empty file) and returns root.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The walk stops at the home directory: the tests' trees stand for
	// everything there is, whatever lies above the temporary directory.
	t.Setenv("HOME", root)
	return root
}

func TestFindWalksUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paths []string
		from  string
		want  string
	}{
		{"lathe.toml above", []string{"ws/lathe.toml", "ws/a/b/c/"}, "ws/a/b/c", "ws"},
		{"repository root", []string{"repo/.git/", "repo/src/pkg/"}, "repo/src/pkg", "repo"},
		{"worktree's .git file", []string{"wt/.git", "wt/cmd/"}, "wt/cmd", "wt"},
		{"nearest wins", []string{"repo/.git/", "repo/sub/lathe.toml", "repo/sub/x/"}, "repo/sub/x", "repo/sub"},
		{"the directory itself", []string{"ws/lathe.toml", "ws/.git/"}, "ws", "ws"},
		{"none: the directory", []string{"plain/a/"}, "plain/a", "plain/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.paths...)
			got, err := Find(filepath.Join(root, tc.from))
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, tc.want); got != want {
				t.Errorf("Find(%s) = %s, want %s", tc.from, got, want)
			}
		})
	}
}

// The walk does not leave the home directory: a lathe.toml above it is no
// workspace of the user's.
func TestFindStopsAtHome(t *testing.T) {
	root := tree(t, "lathe.toml", "home/me/proj/")
	t.Setenv("HOME", filepath.Join(root, "home/me"))
	from := filepath.Join(root, "home/me/proj")
	got, err := Find(from)
	if err != nil {
		t.Fatal(err)
	}
	if got != from {
		t.Errorf("Find = %s, want %s: the walk went above the home directory", got, from)
	}
}

func TestFindNotADirectory(t *testing.T) {
	root := tree(t, "file")
	_, err := Find(filepath.Join(root, "file"))
	var we *WorkspaceError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Find(file) = %v, want a WorkspaceError saying it is not a directory", err)
	}
}

// Another user plants a lathe.toml (or a .git) in a directory everyone may
// write, /tmp say, and the victim runs lathe in /tmp/mine: the workspace
// must not silently become /tmp, where the tools would reach every file.
// The candidate is refused, and the error names it and the way out.
func TestFindRefusesAnotherUsersMarker(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a file owned by another user needs root")
	}
	const other = 65534 // nobody
	for _, tc := range []struct {
		name, marker string
		symlink      bool
	}{
		{"lathe.toml", "lathe.toml", false},
		{".git directory", ".git/", false},
		{".git file", ".git", false},
		// A link is judged by its own owner, not by what it points to.
		{"symbolic link", "lathe.toml", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, "shared/mine/")
			shared := filepath.Join(root, "shared")
			// The shared directory is world-writable and sticky, as /tmp.
			if err := os.Chmod(shared, 0o1777); err != nil {
				t.Fatal(err)
			}
			marker := filepath.Join(shared, strings.TrimSuffix(tc.marker, "/"))
			switch {
			case tc.symlink:
				own := filepath.Join(shared, "mine", "x.toml")
				if err := os.WriteFile(own, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(own, marker); err != nil {
					t.Fatal(err)
				}
			case strings.HasSuffix(tc.marker, "/"):
				if err := os.Mkdir(marker, 0o755); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(marker, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Lchown(marker, other, other); err != nil {
				t.Fatal(err)
			}
			mine := filepath.Join(shared, "mine")
			got, err := Find(mine)
			if err == nil {
				t.Fatalf("Find(%s) = %s, nil: another user's %s chose the workspace", mine, got, tc.marker)
			}
			if !errors.Is(err, ErrForeign) {
				t.Errorf("error %v does not match ErrForeign", err)
			}
			for _, want := range []string{shared, "uid 65534", "--workspace"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			// The victim's own lathe.toml, nearer, is found first.
			if err := os.WriteFile(filepath.Join(mine, "lathe.toml"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if got, err := Find(mine); err != nil || got != mine {
				t.Errorf("with a lathe.toml of one's own, Find = %s, %v; want %s", got, err, mine)
			}
		})
	}
}

// A directory another user owns is refused even when the marker in it is
// the user's: the other user decides what else lies in it.
func TestFindRefusesAnotherUsersDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a directory owned by another user needs root")
	}
	root := tree(t, "theirs/lathe.toml", "theirs/mine/")
	theirs := filepath.Join(root, "theirs")
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(filepath.Join(theirs, "mine")); !errors.Is(err, ErrForeign) {
		t.Fatalf("Find under a directory of another user = %v, want ErrForeign", err)
	}
}

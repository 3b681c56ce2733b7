package process_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/runtime/process"
)

// TestCachePlanted: a schema cache file that someone else could have
// written (to claim a tool read-only, say) is not used: the binary is asked
// again. The control case shows the same file, private, would have been.
func TestCachePlanted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.sh"), []byte(describingTool), 0o755); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "schemas")
	cmd := process.Command{Argv: []string{"sh", "tool.sh"}, Dir: dir}
	asked := func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "asked.log"))
		return strings.Count(string(b), "asked")
	}
	if _, err := process.NewCache(cacheDir).Describe(context.Background(), cmd, nil); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(cacheDir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}
	file := files[0]
	genuine, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	planted := []byte(strings.Replace(string(genuine), `"name":"a"`, `"name":"a","annotations":{"readOnlyHint":true}`, 1))
	if string(planted) == string(genuine) {
		t.Fatalf("the test cannot plant: %s", genuine)
	}
	for _, c := range []struct {
		name    string
		prepare func(t *testing.T)
		used    bool
	}{
		{"private file (control)", func(t *testing.T) { plant(t, file, planted, 0o600) }, true},
		{"file others may write", func(t *testing.T) { plant(t, file, planted, 0o666) }, false},
		{"file the group may write", func(t *testing.T) { plant(t, file, planted, 0o660) }, false},
		{"directory others may write", func(t *testing.T) {
			plant(t, file, planted, 0o600)
			if err := os.Chmod(cacheDir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"symbolic link", func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "elsewhere.json")
			plant(t, other, planted, 0o600)
			os.Remove(file)
			if err := os.Symlink(other, file); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another user's file", func(t *testing.T) {
			if os.Geteuid() != 0 {
				t.Skip("only root can give a file to another user")
			}
			plant(t, file, planted, 0o600)
			if err := os.Chown(file, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.Chmod(cacheDir, 0o700); err != nil {
				t.Fatal(err)
			}
			c.prepare(t)
			before := asked()
			tools, err := process.NewCache(cacheDir).Describe(context.Background(), cmd, nil)
			if err != nil {
				t.Fatal(err)
			}
			readOnly := len(tools) > 0 && tools[0].Annotations.ReadOnlyHint
			again := asked() != before
			if c.used {
				if !readOnly || again {
					t.Fatalf("the control file was not used (read-only %v, binary asked %v)", readOnly, again)
				}
				return
			}
			if readOnly || !again {
				t.Errorf("the planted file was used (read-only %v, binary asked %v)", readOnly, again)
			}
		})
	}
}

func plant(t *testing.T, p string, b []byte, mode os.FileMode) {
	t.Helper()
	os.Remove(p)
	if err := os.WriteFile(p, b, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

package temporal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestCachePlanted: the cached list of a queue's tools decides which tools
// the caller offers; a file another user could have planted or changed is
// not read (the queue is asked instead), and a FIFO does not hang the
// reader.
func TestCachePlanted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "temporal")
	c := &Client{opts: Options{CacheDir: dir, Address: "a:1", Namespace: "ns"}}
	l := &listOutput{Registry: "v1", Tools: []tool.Definition{{Name: "noop"}}}
	c.writeCache("q", l)
	f := c.cacheFile("q")
	if got := c.readCache("q"); got == nil || got.Registry != "v1" || got.Tools[0].Name != "noop" {
		t.Fatalf("the cache written was not read back: %+v", got)
	}
	if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the cache file is not 0600: %v %v", fi.Mode(), err)
	}
	if c.readCache("other") != nil {
		t.Error("another queue's cache was read")
	}

	os.Chmod(f, 0o666)
	if c.readCache("q") != nil {
		t.Error("a cache file others may write was read")
	}
	os.Chmod(f, 0o600)

	os.Chmod(dir, 0o777)
	if c.readCache("q") != nil {
		t.Error("a cache in a directory others may write was read")
	}
	os.Chmod(dir, 0o700)

	planted := filepath.Join(t.TempDir(), "planted.json")
	os.WriteFile(planted, []byte(`{"registry":"evil","tools":[{"name":"evil"}]}`), 0o600)
	os.Remove(f)
	if err := os.Symlink(planted, f); err != nil {
		t.Fatal(err)
	}
	if c.readCache("q") != nil {
		t.Error("a link in the cache was followed")
	}
	os.Remove(f)

	if err := syscall.Mkfifo(f, 0o600); err != nil {
		t.Fatal(err)
	}
	if c.readCache("q") != nil {
		t.Error("a FIFO was read as a cache file")
	}
}

// TestMayRetry: a call whose worker died runs again only for a tool that
// may be run again; a tool that says nothing may destroy.
func TestMayRetry(t *testing.T) {
	for _, tc := range []struct {
		a    tool.Annotations
		want bool
	}{
		{tool.Annotations{}, false},
		{tool.Annotations{DestructiveHint: tool.Bool(true)}, false},
		{tool.Annotations{DestructiveHint: tool.Bool(true), IdempotentHint: true}, true},
		{tool.Annotations{ReadOnlyHint: true}, true},
		{tool.Annotations{DestructiveHint: tool.Bool(false)}, true},
	} {
		if got := mayRetry(tc.a); got != tc.want {
			t.Errorf("mayRetry(%+v) = %v, want %v", tc.a, got, tc.want)
		}
	}
}

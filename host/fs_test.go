package host_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/tool"
)

func TestReadWithinScope(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Read: []string{"src/**"}}).Begin(testCtx(t))
	defer s.End()
	var r host.ReadResult
	wantOK(t, "read src/main.go", call(t, s, host.MethodRead, host.ReadParams{Path: "src/main.go"}, &r))
	if string(r.Data) != "package main\n" || !r.EOF {
		t.Fatalf("read = %q eof %v", r.Data, r.EOF)
	}
	wantOK(t, "read in parts", call(t, s, host.MethodRead, host.ReadParams{Path: "src/main.go", Offset: 8, Length: 4}, &r))
	if string(r.Data) != "main" || r.EOF {
		t.Fatalf("read part = %q eof %v", r.Data, r.EOF)
	}
}

// Each path below reaches a file that exists (inside or outside the
// workspace) and is outside the tool's read scope: the read must be
// denied, and the secret never returned.
func TestReadTraversalDenied(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink(filepath.Join(f.outside, "secret"), filepath.Join(f.ws, "src", "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret/key", filepath.Join(f.ws, "src", "in-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "src", "dir-link")); err != nil {
		t.Fatal(err)
	}
	s := f.host(t, host.Permissions{Read: []string{"src/**"}}).Begin(testCtx(t))
	defer s.End()
	for _, p := range []string{
		"../outside/secret",
		"src/../../outside/secret",
		filepath.Join(f.outside, "secret"),
		"src/../secret/key", // a glob trick: the pattern's prefix, then out
		"src/out-link",      // a link inside pointing out of the workspace
		"src/in-link",       // a link inside the scope pointing out of it
		"src/dir-link/secret",
		"secret/key",
		"/etc/passwd",
	} {
		var r host.ReadResult
		e := call(t, s, host.MethodRead, host.ReadParams{Path: p}, &r)
		wantCode(t, "read "+p, e, host.CodeDenied)
		if strings.Contains(e.Message, "secret\n") {
			t.Errorf("read %s: the denial carries the secret: %s", p, e.Message)
		}
	}
}

func TestDenialNamesTheKeyToAdd(t *testing.T) {
	f := newFixture(t)
	h := f.hostWith(t, host.Config{Tool: "fmt", Table: "tools.fmt", Origin: "lathe.toml:12",
		Perms: host.Permissions{Read: []string{"src/**"}}})
	s := h.Begin(testCtx(t))
	defer s.End()
	e := call(t, s, host.MethodRead, host.ReadParams{Path: "secret/key"}, nil)
	wantCode(t, "read secret/key", e, host.CodeDenied, `"secret/key"`, "to read in [tools.fmt]", "lathe.toml:12")
	e = call(t, s, host.MethodWrite, host.WriteParams{Path: "src/main.go", Data: []byte("x")}, nil)
	wantCode(t, "write src/main.go", e, host.CodeDenied, `"src/main.go" to write in [tools.fmt]`)
}

func TestStateDirUnreachable(t *testing.T) {
	f := newFixture(t)
	if err := os.Symlink("../.lathe", filepath.Join(f.ws, "src", "state")); err != nil {
		t.Fatal(err)
	}
	// Even a tool granted the whole workspace never reaches lathe's state.
	s := f.host(t, host.Permissions{Write: []string{"**"}}).Begin(testCtx(t))
	defer s.End()
	for _, p := range []string{".lathe/audit.db", "./.lathe/audit.db", ".LATHE/audit.db", "src/state/audit.db", "src/../.lathe/audit.db"} {
		wantCode(t, "read "+p, call(t, s, host.MethodRead, host.ReadParams{Path: p}, nil), host.CodeDenied)
		wantCode(t, "write "+p, call(t, s, host.MethodWrite, host.WriteParams{Path: p, Data: []byte("forged")}, nil), host.CodeDenied)
	}
	wantCode(t, "remove .lathe", call(t, s, host.MethodRemove, host.RemoveParams{Path: ".lathe", Recursive: true}, nil), host.CodeDenied)
	wantCode(t, "list .lathe", call(t, s, host.MethodList, host.PathParams{Path: ".lathe"}, nil), host.CodeDenied)
	if got := f.read(t, ".lathe/audit.db"); got != "audit\n" {
		t.Fatalf(".lathe/audit.db changed: %q", got)
	}
	var l host.ListResult
	wantOK(t, "list .", call(t, s, host.MethodList, host.PathParams{Path: "."}, &l))
	for _, e := range l.Entries {
		if e.Name == ".lathe" {
			t.Fatal("list . shows .lathe")
		}
	}
	if len(l.Entries) < 4 {
		t.Fatalf("list . = %v, want the workspace's entries", l.Entries)
	}
}

func TestConfigFileNeverWritten(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Write: []string{"**"}}).Begin(testCtx(t))
	defer s.End()
	for _, p := range []string{"lathe.toml", "LATHE.TOML", "./lathe.toml", "src/../lathe.toml"} {
		e := call(t, s, host.MethodWrite, host.WriteParams{Path: p, Data: []byte("[policy]\n")}, nil)
		wantCode(t, "write "+p, e, host.CodeDenied, "configuration")
		e = call(t, s, host.MethodWrite, host.WriteParams{Path: p, Data: []byte("[policy]\n"), Append: true}, nil)
		wantCode(t, "append "+p, e, host.CodeDenied)
		wantCode(t, "remove "+p, call(t, s, host.MethodRemove, host.RemoveParams{Path: p}, nil), host.CodeDenied)
	}
	if err := os.Symlink("../lathe.toml", filepath.Join(f.ws, "src", "cfg")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "write through a link", call(t, s, host.MethodWrite, host.WriteParams{Path: "src/cfg", Data: []byte("x")}, nil), host.CodeDenied)
	wantCode(t, "remove .", call(t, s, host.MethodRemove, host.RemoveParams{Path: ".", Recursive: true}, nil), host.CodeDenied)
	if got := f.read(t, "lathe.toml"); got != "# configuration\n" {
		t.Fatalf("lathe.toml changed: %q", got)
	}
	// Reading it is another matter: a grant of it allows that.
	var r host.ReadResult
	wantOK(t, "read lathe.toml", call(t, s, host.MethodRead, host.ReadParams{Path: "lathe.toml"}, &r))
}

func TestWriteOutsideWriteScope(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Read: []string{"src/**"}, Write: []string{"out/"}}).Begin(testCtx(t))
	defer s.End()
	// A read-only scope is not writable, nor removable.
	wantCode(t, "write src", call(t, s, host.MethodWrite, host.WriteParams{Path: "src/main.go", Data: []byte("evil")}, nil), host.CodeDenied)
	wantCode(t, "remove src", call(t, s, host.MethodRemove, host.RemoveParams{Path: "src/main.go"}, nil), host.CodeDenied)
	// A path that starts in the write scope and climbs out of it.
	wantCode(t, "write out/../src", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/../src/main.go", Data: []byte("evil")}, nil), host.CodeDenied)
	// A link in the write scope pointing into the read-only one.
	if err := os.Symlink("../src/main.go", filepath.Join(f.ws, "out", "link")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "write out/link", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/link", Data: []byte("evil")}, nil), host.CodeDenied)
	wantCode(t, "write outside", call(t, s, host.MethodWrite, host.WriteParams{Path: "../outside/secret", Data: []byte("evil")}, nil), host.CodeDenied)
	if got := f.read(t, "src/main.go"); got != "package main\n" {
		t.Fatalf("src/main.go changed: %q", got)
	}
	// Within it, writing works, and so does reading back (write implies read).
	wantOK(t, "write out/new.txt", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/a/new.txt", Data: []byte("new"), MakeDirs: true}, nil))
	wantOK(t, "append", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/a/new.txt", Data: []byte("er"), Append: true}, nil))
	var r host.ReadResult
	wantOK(t, "read back", call(t, s, host.MethodRead, host.ReadParams{Path: "out/a/new.txt"}, &r))
	if string(r.Data) != "newer" {
		t.Fatalf("read back %q", r.Data)
	}
	wantCode(t, "write without make_dirs", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/b/c.txt", Data: []byte("x")}, nil), host.CodeFailed, "no such file")
}

// A symbolic link swapped in after the path was checked is not followed:
// the file operations reach the checked path from a descriptor of the
// workspace, following no link. The swap is made deterministic here by
// checking with [host.Session.Check] first; the race test below runs it
// concurrently.
func TestSwappedLinkNotFollowed(t *testing.T) {
	linuxOnly(t)
	f := newFixture(t)
	s := f.host(t, host.Permissions{Write: []string{"out/"}}).Begin(testCtx(t))
	defer s.End()
	if err := os.MkdirAll(filepath.Join(f.ws, "out", "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.ws, "out", "d", "key"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(testCtx(t), host.KindRead, "out/d/key"); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// Now out/d becomes a link to the read-only secret directory.
	if err := os.RemoveAll(filepath.Join(f.ws, "out", "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../secret", filepath.Join(f.ws, "out", "d")); err != nil {
		t.Fatal(err)
	}
	// Resolved afresh, the path is denied; the descriptor walk of a path
	// that was checked as free of links refuses the link too.
	e := call(t, s, host.MethodRead, host.ReadParams{Path: "out/d/key"}, nil)
	wantCode(t, "read through the swapped link", e, host.CodeDenied)
	if err := host.OpenChecked(s, "out/d/key"); err == nil {
		t.Fatal("the file operations followed a link that appeared after the check")
	}
}

// Many reads and writes race a goroutine that swaps a directory of the
// write scope for a link to the secret directory: no read returns the
// secret and no write lands in it.
func TestSwapRace(t *testing.T) {
	linuxOnly(t)
	f := newFixture(t)
	s := f.host(t, host.Permissions{Write: []string{"out/"}}).Begin(testCtx(t))
	defer s.End()
	d := filepath.Join(f.ws, "out", "d")
	mkdir := func() {
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "key"), []byte("mine"), 0o644)
	}
	mkdir()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.RemoveAll(d)
			os.Symlink("../secret", d)
			os.Remove(d)
			mkdir()
		}
	}()
	deadline := time.Now().Add(time.Second)
	n := 0
	for time.Now().Before(deadline) {
		var r host.ReadResult
		if e := call(t, s, host.MethodRead, host.ReadParams{Path: "out/d/key"}, &r); e == nil && strings.Contains(string(r.Data), "secret") {
			t.Fatalf("read returned %q", r.Data)
		}
		call(t, s, host.MethodWrite, host.WriteParams{Path: "out/d/key", Data: []byte("mine")}, nil)
		n++
	}
	close(stop)
	wg.Wait()
	if got := f.read(t, "secret/key"); got != "workspace secret\n" {
		t.Fatalf("secret/key changed to %q after %d rounds", got, n)
	}
}

func TestOversized(t *testing.T) {
	f := newFixture(t)
	h := f.hostWith(t, host.Config{Perms: host.Permissions{Write: []string{"out/"}}, Limits: host.Limits{Read: 8, Write: 8}})
	s := h.Begin(testCtx(t))
	defer s.End()
	if err := os.WriteFile(filepath.Join(f.ws, "out", "big"), []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "read length 9", call(t, s, host.MethodRead, host.ReadParams{Path: "out/big", Length: 9}, nil), host.CodeTooLarge, "limit")
	var r host.ReadResult
	wantOK(t, "read to the limit", call(t, s, host.MethodRead, host.ReadParams{Path: "out/big"}, &r))
	if string(r.Data) != "01234567" || r.EOF {
		t.Fatalf("read = %q eof %v, want the first 8 bytes and eof false", r.Data, r.EOF)
	}
	wantOK(t, "read the rest", call(t, s, host.MethodRead, host.ReadParams{Path: "out/big", Offset: 8}, &r))
	if string(r.Data) != "89abcdef" || !r.EOF {
		t.Fatalf("read rest = %q eof %v", r.Data, r.EOF)
	}
	wantCode(t, "write 9 bytes", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/new", Data: []byte("123456789")}, nil), host.CodeTooLarge)
	if _, err := os.Stat(filepath.Join(f.ws, "out", "new")); !os.IsNotExist(err) {
		t.Fatalf("an oversized write created its file (%v)", err)
	}
}

func TestSpecialFilesRefused(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Write: []string{"out/"}}).Begin(testCtx(t))
	defer s.End()
	if err := mkfifo(filepath.Join(f.ws, "out", "fifo")); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan *host.Error, 1)
	go func() { done <- call(t, s, host.MethodRead, host.ReadParams{Path: "out/fifo"}, nil) }()
	select {
	case e := <-done:
		wantCode(t, "read a FIFO", e, host.CodeFailed, "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO hung")
	}
	wantCode(t, "read a directory", call(t, s, host.MethodRead, host.ReadParams{Path: "out"}, nil), host.CodeFailed, "directory")
}

func TestListStatRemove(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Read: []string{"src"}, Write: []string{"out"}}).Begin(testCtx(t))
	defer s.End()
	if err := os.Symlink(f.outside, filepath.Join(f.ws, "out", "away")); err != nil {
		t.Fatal(err)
	}
	var l host.ListResult
	wantOK(t, "list src", call(t, s, host.MethodList, host.PathParams{Path: "src"}, &l))
	if len(l.Entries) != 2 || l.Entries[0].Name != "main.go" || l.Entries[0].Type != "file" || l.Entries[1].Type != "dir" {
		t.Fatalf("list src = %+v", l.Entries)
	}
	wantOK(t, "list out", call(t, s, host.MethodList, host.PathParams{Path: "out"}, &l))
	if len(l.Entries) != 2 || l.Entries[0].Name != "away" || l.Entries[0].Type != "symlink" {
		t.Fatalf("list out = %+v", l.Entries)
	}
	wantCode(t, "list .", call(t, s, host.MethodList, host.PathParams{Path: "."}, nil), host.CodeDenied)
	var fi host.FileInfo
	wantOK(t, "stat", call(t, s, host.MethodStat, host.PathParams{Path: "src/main.go"}, &fi))
	if fi.Name != "main.go" || fi.Type != "file" || fi.Size != int64(len("package main\n")) {
		t.Fatalf("stat = %+v", fi)
	}
	wantCode(t, "stat missing", call(t, s, host.MethodStat, host.PathParams{Path: "src/nope"}, nil), host.CodeFailed, "no such file")

	// A directory goes only when recursive says so; links in it are
	// removed, never followed.
	if err := os.MkdirAll(filepath.Join(f.ws, "out", "tree", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.ws, "out", "tree", "deep", "x"), []byte("x"), 0o644)
	if err := os.Symlink(filepath.Join(f.outside, "dir"), filepath.Join(f.ws, "out", "tree", "link")); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "remove a full directory", call(t, s, host.MethodRemove, host.RemoveParams{Path: "out/tree"}, nil), host.CodeFailed, "recursive")
	wantOK(t, "remove -r", call(t, s, host.MethodRemove, host.RemoveParams{Path: "out/tree", Recursive: true}, nil))
	if _, err := os.Lstat(filepath.Join(f.ws, "out", "tree")); !os.IsNotExist(err) {
		t.Fatalf("out/tree is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.outside, "dir", "file")); err != nil {
		t.Fatalf("the recursive remove followed a link out of the workspace: %v", err)
	}
	// A link whose target is outside: the path resolves out, denied.
	wantCode(t, "remove out/away", call(t, s, host.MethodRemove, host.RemoveParams{Path: "out/away", Recursive: true}, nil), host.CodeDenied)
	if _, err := os.Stat(filepath.Join(f.outside, "secret")); err != nil {
		t.Fatalf("the outside was touched: %v", err)
	}
}

func TestEndedSessionRunsNothing(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, host.Permissions{Write: []string{"out/"}})
	s := h.Begin(testCtx(t))
	wantOK(t, "write before End", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/a", Data: []byte("1")}, nil))
	s.End()
	e := call(t, s, host.MethodWrite, host.WriteParams{Path: "out/b", Data: []byte("2")}, nil)
	wantCode(t, "write after End", e, host.CodeEnded)
	if _, err := os.Stat(filepath.Join(f.ws, "out", "b")); !os.IsNotExist(err) {
		t.Fatalf("a write after End ran (%v)", err)
	}
	if err := s.Check(testCtx(t), host.KindRead, "out/a"); err == nil || err.(*host.Error).Code != host.CodeEnded {
		t.Fatalf("Check after End = %v, want CodeEnded", err)
	}
	// A call whose context ended is over too.
	ctx, cancel := context.WithCancel(context.Background())
	s2 := h.Begin(ctx)
	cancel()
	wantCode(t, "request after the call's context ended", call(t, s2, host.MethodStat, host.PathParams{Path: "out/a"}, nil), host.CodeEnded)
}

// End cancels a request in flight (here a question nobody answers) and
// returns once it has returned.
func TestEndCancelsInflight(t *testing.T) {
	f := newFixture(t)
	h := f.host(t, host.Permissions{})
	asked := make(chan struct{})
	ctx := tool.WithHooks(testCtx(t), tool.Hooks{Elicit: func(ctx context.Context, _ *tool.ElicitRequest) (*tool.ElicitResult, error) {
		close(asked)
		<-ctx.Done()
		return nil, ctx.Err()
	}})
	s := h.Begin(ctx)
	done := make(chan *host.Error, 1)
	go func() { done <- call(t, s, host.MethodAsk, host.AskParams{Message: "go on?"}, nil) }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the question never reached the hook")
	}
	ended := make(chan struct{})
	go func() { s.End(); close(ended) }()
	select {
	case e := <-done:
		wantCode(t, "ask cut by End", e, host.CodeEnded)
	case <-time.After(10 * time.Second):
		t.Fatal("End did not cancel the request in flight")
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("End hung")
	}
}

func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Read: []string{"src"}, Write: []string{"out"}}).Begin(testCtx(t))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("out/f%d", i)
			for j := range 20 {
				data := fmt.Sprintf("%d-%d", i, j)
				if e := call(t, s, host.MethodWrite, host.WriteParams{Path: name, Data: []byte(data)}, nil); e != nil {
					errs <- e
					return
				}
				var r host.ReadResult
				if e := call(t, s, host.MethodRead, host.ReadParams{Path: name}, &r); e != nil {
					errs <- e
					return
				}
				if string(r.Data) != data {
					errs <- fmt.Errorf("%s: read %q after writing %q", name, r.Data, data)
					return
				}
				if e := call(t, s, host.MethodRead, host.ReadParams{Path: "secret/key"}, nil); e == nil || e.Code != host.CodeDenied {
					errs <- fmt.Errorf("read secret/key: %v", e)
					return
				}
			}
		}()
	}
	wg.Wait()
	s.End()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCheck(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{Read: []string{"src"}, Write: []string{"out"}}).Begin(testCtx(t))
	defer s.End()
	for _, c := range []struct {
		kind, path string
		ok         bool
	}{
		{host.KindRead, "src/main.go", true},
		{host.KindList, "src", true},
		{host.KindWrite, "src/main.go", false},
		{host.KindWrite, "out/x", true},
		{host.KindRead, "out/x", true},
		{host.KindRead, "secret/key", false},
		{host.KindRead, filepath.Join(f.ws, "src", "main.go"), true},
		{host.KindRead, "../outside/secret", false},
		{host.KindWrite, "lathe.toml", false},
		{host.KindRead, ".lathe/audit.db", false},
	} {
		err := s.Check(testCtx(t), c.kind, c.path)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %s) = %v, want ok %v", c.kind, c.path, err, c.ok)
		}
	}
	if err := s.Check(testCtx(t), "chmod", "src"); err == nil {
		t.Error("Check of an unknown kind succeeded")
	}
}

func TestNewRefusesBadPermissions(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		perms host.Permissions
		want  string
	}{
		{host.Permissions{Read: []string{"../up"}}, "read"},
		{host.Permissions{Write: []string{"/etc"}}, "outside the workspace"},
		{host.Permissions{Net: []string{"https://x.example.com"}}, "net"},
		{host.Permissions{Run: []string{"git status"}}, "run"},
		{host.Permissions{Env: []string{"A=B"}}, "env"},
	} {
		_, err := host.New(host.Config{Tool: "t", Workspace: f.ws, Perms: c.perms})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error naming %q", c.perms, err, c.want)
		}
	}
	if _, err := host.New(host.Config{Tool: "t", Perms: host.Permissions{Read: []string{"."}}}); err == nil {
		t.Error("New without a workspace succeeded")
	}
	h := f.host(t, host.Permissions{Read: []string{filepath.Join(f.ws, "src")}})
	s := h.Begin(testCtx(t))
	defer s.End()
	wantOK(t, "read by an absolute grant", call(t, s, host.MethodRead, host.ReadParams{Path: "src/main.go"}, nil))
	if got := h.Permissions(); got.Read[0] != filepath.Join(f.ws, "src") {
		t.Fatalf("Permissions() = %+v", got)
	}
	if ws, _ := filepath.EvalSymlinks(f.ws); h.Workspace() != ws {
		t.Fatalf("Workspace() = %s, want %s", h.Workspace(), ws)
	}
}

// linuxOnly skips a test of what only Linux's descriptor walk refuses: a
// link swapped in that stays inside the workspace (os.Root, used
// elsewhere, follows it).
func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("on " + runtime.GOOS + " the host works through os.Root, which follows links that stay inside the workspace")
	}
}

// A hard link in the write scope to lathe.toml: appending would write
// into the configuration under its other name, and is refused; replacing
// the file renames a new one over the link's name and leaves lathe.toml.
func TestHardLinkToConfig(t *testing.T) {
	linuxOnly(t)
	f := newFixture(t)
	if err := os.Link(filepath.Join(f.ws, "lathe.toml"), filepath.Join(f.ws, "out", "hl")); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	s := f.host(t, host.Permissions{Write: []string{"out/"}}).Begin(testCtx(t))
	defer s.End()
	e := call(t, s, host.MethodWrite, host.WriteParams{Path: "out/hl", Data: []byte("[policy]\n"), Append: true}, nil)
	wantCode(t, "append through a hard link", e, host.CodeDenied, "hard links")
	wantOK(t, "replace the link's name", call(t, s, host.MethodWrite, host.WriteParams{Path: "out/hl", Data: []byte("mine")}, nil))
	if got := f.read(t, "lathe.toml"); got != "# configuration\n" {
		t.Fatalf("lathe.toml changed through a hard link: %q", got)
	}
	if got := f.read(t, "out/hl"); got != "mine" {
		t.Fatalf("out/hl = %q", got)
	}
}

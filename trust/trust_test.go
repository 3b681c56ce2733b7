package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// setup returns a workspace with a lathe.toml holding data and a store
// outside it.
func setup(t *testing.T, data string) (ws, file string, s *Store) {
	t.Helper()
	root := t.TempDir()
	ws = filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(ws, "lathe.toml")
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws, file, Open(filepath.Join(root, "state", "lathe", "trust"))
}

func check(t *testing.T, s *Store, ws, file, data string) Status {
	t.Helper()
	st, _, err := s.Check(ws, file, []byte(data))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return st
}

func TestTrustCheckRevoke(t *testing.T) {
	const data = "[tools.x]\ncommand = [\"x\"]\n"
	ws, file, s := setup(t, data)
	if st := check(t, s, ws, file, data); st != New {
		t.Fatalf("before trust: %v, want New", st)
	}
	if err := s.Trust(ws, file, []byte(data)); err != nil {
		t.Fatal(err)
	}
	if st := check(t, s, ws, file, data); st != Trusted {
		t.Fatalf("after trust: %v, want Trusted", st)
	}
	// One byte changed is another file.
	changed := strings.Replace(data, "x\"]", "y\"]", 1)
	st, rec, err := s.Check(ws, file, []byte(changed))
	if err != nil || st != Changed || rec == nil || rec.Content != data {
		t.Fatalf("changed: %v %+v %v, want Changed with the trusted content", st, rec, err)
	}
	if had, err := s.Revoke(ws, file); !had || err != nil {
		t.Fatalf("Revoke: %v %v", had, err)
	}
	if st := check(t, s, ws, file, data); st != New {
		t.Fatalf("after revoke: %v, want New", st)
	}
	if had, err := s.Revoke(ws, file); had || err != nil {
		t.Fatalf("second Revoke: %v %v", had, err)
	}
}

// A record is written 0600 in a 0700 directory whatever the umask, and
// nothing of the write is left behind.
func TestTrustPermissions(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ws, file, s := setup(t, "a")
	if err := s.Trust(ws, file, []byte("a")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode %v, want 0700", fi.Mode().Perm())
	}
	ents, err := os.ReadDir(s.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || !strings.HasSuffix(ents[0].Name(), ".json") {
		t.Fatalf("store holds %v, want one record", ents)
	}
	info, _ := ents[0].Info()
	if info.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", info.Mode().Perm())
	}
}

// Writers replacing a record while readers check it: a reader sees the old
// record or the new one, never part of one (which would be reported as
// corrupt).
func TestTrustAtomic(t *testing.T) {
	ws, file, s := setup(t, "")
	versions := []string{strings.Repeat("a", 1<<16), strings.Repeat("b", 1<<17)}
	if err := s.Trust(ws, file, []byte(versions[0])); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				if err := s.Trust(ws, file, []byte(versions[(i+w)%2])); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				st, _, err := s.Check(ws, file, []byte(versions[0]))
				if err != nil {
					errc <- err
					return
				}
				if st == New {
					errc <- errors.New("the record vanished while it was replaced")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	ents, _ := os.ReadDir(s.Dir())
	if len(ents) != 1 {
		t.Errorf("store holds %d files after the writes, want 1 (temporary files left behind?)", len(ents))
	}
}

// A record that does not hold together is an error naming it, never trust.
func TestCorruptRecord(t *testing.T) {
	const data = "a = 1\n"
	for _, tc := range []struct {
		name    string
		corrupt func(rec string) string
	}{
		{"garbage", func(string) string { return "{not json" }},
		{"truncated", func(rec string) string { return rec[:len(rec)/2] }},
		{"content edited", func(rec string) string {
			return strings.Replace(rec, `"content": "a = 1\n"`, `"content": "a = 2\n"`, 1)
		}},
		{"hash edited", func(rec string) string {
			return strings.Replace(rec, Sum([]byte(data)), Sum([]byte("b = 1\n")), 1)
		}},
		{"unknown field", func(rec string) string { return strings.Replace(rec, "{", `{"trusted": true,`, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws, file, s := setup(t, data)
			if err := s.Trust(ws, file, []byte(data)); err != nil {
				t.Fatal(err)
			}
			ents, _ := os.ReadDir(s.Dir())
			p := filepath.Join(s.Dir(), ents[0].Name())
			rec, _ := os.ReadFile(p)
			bad := tc.corrupt(string(rec))
			if bad == string(rec) {
				t.Fatal("the corruption changed nothing")
			}
			if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			st, _, err := s.Check(ws, file, []byte(data))
			if err == nil || st == Trusted {
				t.Fatalf("Check of a corrupt record: %v, %v; want an error and no trust", st, err)
			}
			if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not say the record %s is corrupt", err, p)
			}
			if _, err := s.List(); err == nil {
				t.Error("List passed over the corrupt record")
			}
		})
	}
}

// A record copied to the name of another file's record does not make that
// file trusted.
func TestRecordOfAnotherFile(t *testing.T) {
	ws, file, s := setup(t, "x")
	other := filepath.Join(ws, "other.toml")
	if err := s.Trust(ws, other, []byte("x")); err != nil {
		t.Fatal(err)
	}
	wsr, fr, _ := Canonical(ws, file)
	wso, fo, _ := Canonical(ws, other)
	data, _ := os.ReadFile(s.recordPath(wso, fo))
	if err := os.WriteFile(s.recordPath(wsr, fr), data, 0o600); err != nil {
		t.Fatal(err)
	}
	st, _, err := s.Check(ws, file, []byte("x"))
	if err == nil || st == Trusted {
		t.Fatalf("a copied record: %v, %v; want an error", st, err)
	}
}

// Trust is per workspace and per file name: the same bytes in another
// workspace, or reached through a link, are not trusted.
func TestTrustIsPerWorkspaceAndName(t *testing.T) {
	ws, file, s := setup(t, "x")
	if err := s.Trust(ws, file, []byte("x")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(ws), "other")
	os.Mkdir(other, 0o755)
	link := filepath.Join(other, "lathe.toml")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if st := check(t, s, other, link, "x"); st != New {
		t.Errorf("another workspace's link to a trusted file: %v, want New", st)
	}
	if st := check(t, s, other, file, "x"); st != New {
		t.Errorf("the trusted file used for another workspace: %v, want New", st)
	}
	// The workspace named through a link is the same workspace.
	wsLink := filepath.Join(filepath.Dir(ws), "wslink")
	if err := os.Symlink(ws, wsLink); err != nil {
		t.Fatal(err)
	}
	if st := check(t, s, wsLink, filepath.Join(wsLink, "lathe.toml"), "x"); st != Trusted {
		t.Errorf("the workspace through a link: %v, want Trusted", st)
	}
}

// A store that lies in the workspace (a home directory used as the
// workspace, say) could be written by what runs there: refused, and nothing
// is written.
func TestStoreInsideWorkspace(t *testing.T) {
	ws, file, _ := setup(t, "x")
	for _, dir := range []string{
		filepath.Join(ws, ".local", "state", "lathe", "trust"),
		ws,
	} {
		s := Open(dir)
		if err := s.Trust(ws, file, []byte("x")); !errors.Is(err, ErrInsideWorkspace) {
			t.Errorf("Trust with the store at %s: %v, want ErrInsideWorkspace", dir, err)
		}
		if _, _, err := s.Check(ws, file, []byte("x")); !errors.Is(err, ErrInsideWorkspace) {
			t.Errorf("Check with the store at %s: %v, want ErrInsideWorkspace", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".local")); err == nil {
		t.Error("the refused store was created")
	}
	// Through a link out of the workspace and back in.
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	if err := Open(filepath.Join(link, "trust")).Trust(ws, file, []byte("x")); !errors.Is(err, ErrInsideWorkspace) {
		t.Errorf("a store reached through a link into the workspace: %v, want ErrInsideWorkspace", err)
	}
}

// A store directory other users may write is refused: they could trust
// files for this user.
func TestStoreWritableByOthers(t *testing.T) {
	ws, file, s := setup(t, "x")
	if err := s.Trust(ws, file, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(s.Dir(), 0o777); err != nil {
		t.Fatal(err)
	}
	if st, _, err := s.Check(ws, file, []byte("x")); err == nil || st == Trusted {
		t.Fatalf("a world-writable store: %v, %v; want an error", st, err)
	}
	if err := s.Trust(ws, file, []byte("x")); err == nil {
		t.Fatal("Trust wrote into a world-writable store")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/x/state")
	if d, _ := DefaultDir(); d != "/x/state/lathe/trust" {
		t.Errorf("DefaultDir with XDG_STATE_HOME: %s", d)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if d, _ := DefaultDir(); d != "/home/u/.local/state/lathe/trust" {
		t.Errorf("DefaultDir with a relative XDG_STATE_HOME: %s", d)
	}
	t.Setenv("HOME", "")
	if _, err := DefaultDir(); err == nil {
		t.Error("DefaultDir without HOME: no error")
	}
}

func TestList(t *testing.T) {
	ws, file, s := setup(t, "x")
	if recs, err := s.List(); len(recs) != 0 || err != nil {
		t.Fatalf("List of an empty store: %v %v", recs, err)
	}
	s.Trust(ws, file, []byte("x"))
	s.Trust(ws, filepath.Join(ws, "a.toml"), []byte("y"))
	recs, err := s.List()
	if err != nil || len(recs) != 2 || filepath.Base(recs[0].File) != "a.toml" || recs[1].Content != "x" {
		t.Fatalf("List: %+v %v", recs, err)
	}
}

func TestDiff(t *testing.T) {
	got := Diff("a\nb\nc\n", "a\nB\nc\nd\n")
	want := "  a\n- b\n+ B\n  c\n+ d\n"
	if got != want {
		t.Errorf("Diff:\n%s\nwant:\n%s", got, want)
	}
	if Diff("same", "same") != "" {
		t.Error("Diff of equal texts is not empty")
	}
	if got := Diff("", "x\n"); got != "+ x\n" {
		t.Errorf("Diff from nothing: %q", got)
	}
}

// A line that would move the cursor or hide text is shown escaped, so that
// what a person reads is what the file says.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"command = [\"x\"]":                     "command = [\"x\"]",
		"a\tb":                                  "a\tb",
		"harmless = 1\r" + `command = ["evil"]`: `"harmless = 1\rcommand = [\"evil\"]"`,
		"x\x1b[2K":                              `"x\x1b[2K"`,
		"\xff":                                  `"\xff"`,
		"a\u202eb":                              `"a\u202eb"`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %s, want %s", in, got, want)
		}
	}
	if d := Diff("", "ok\nhide\x1b[1A\n"); !strings.Contains(d, `+ "hide\x1b[1A"`) {
		t.Errorf("Diff does not escape a control sequence: %q", d)
	}
}

// BenchmarkCheck measures what trust adds to starting lathe with a trusted
// 4 KiB lathe.toml: resolving the paths, reading the record and hashing. The
// floor is BenchmarkReadFile, reading the file itself.
func BenchmarkCheck(b *testing.B) {
	data := strings.Repeat("[tools.x]\ncommand = [\"./x\"]\n", 4096/26)
	root := b.TempDir()
	ws := filepath.Join(root, "ws")
	os.Mkdir(ws, 0o755)
	file := filepath.Join(ws, "lathe.toml")
	os.WriteFile(file, []byte(data), 0o644)
	s := Open(filepath.Join(root, "state"))
	if err := s.Trust(ws, file, []byte(data)); err != nil {
		b.Fatal(err)
	}
	b.Run("ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(file); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Check", func(b *testing.B) {
		for b.Loop() {
			if st, _, err := s.Check(ws, file, []byte(data)); st != Trusted || err != nil {
				b.Fatal(st, err)
			}
		}
	})
}

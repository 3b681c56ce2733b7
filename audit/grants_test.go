package audit_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

// grantsSetup returns a workspace and a grants directory outside it.
func grantsSetup(t *testing.T) (ws, dir string) {
	t.Helper()
	root := t.TempDir()
	ws = filepath.Join(root, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws, filepath.Join(root, "state", "lathe", "grants")
}

func openGrants(t *testing.T, dir, ws string) *audit.Grants {
	t.Helper()
	g, err := audit.OpenGrants(dir, ws)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// wipeGranted returns a workspace, a grants directory outside it, and the
// grants of that workspace, which hold one grant: of the tool "wipe".
func wipeGranted(t *testing.T) (ws, dir string, g *audit.Grants) {
	t.Helper()
	ws, dir = grantsSetup(t)
	g = openGrants(t, dir, ws)
	if err := g.AddGrant(context.Background(), policy.Grant{Tool: "wipe"}); err != nil {
		t.Fatal(err)
	}
	return ws, dir, g
}

// wipe calls the asking tool "wipe" of an engine whose policy has nobody
// to ask: it runs only when a grant covers it.
func wipe(t *testing.T, g policy.GrantStore) *tool.Result {
	t.Helper()
	s, _ := open(t)
	e := newEngine(s, &policy.Policy{}, g)
	defer e.Close()
	return e.Call(context.Background(), &tool.Call{Name: "wipe", Arguments: json.RawMessage(`{"path":"x"}`)}).Result
}

func TestGrants(t *testing.T) {
	ws, dir := grantsSetup(t)
	ctx := context.Background()
	g := openGrants(t, dir, ws)
	if ok, err := g.Granted(ctx, "wipe", ""); ok || err != nil {
		t.Fatal(ok, err)
	}
	if r := wipe(t, g); !r.IsError || !strings.Contains(r.Text(), "no one to ask") {
		t.Fatalf("wipe without a grant: %s", r.Text())
	}
	first := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := g.AddGrant(ctx, policy.Grant{Tool: "wipe", Created: first}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddGrant(ctx, policy.Grant{Tool: "wipe", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := g.AddGrant(ctx, policy.Grant{Tool: "run_command", Command: "git log"}); err != nil {
		t.Fatal(err)
	}
	// Another Grants, as another process opens, sees them, and the
	// engine honours them.
	g2 := openGrants(t, dir, ws)
	if ok, err := g2.Granted(ctx, "wipe", ""); !ok || err != nil {
		t.Fatal("grant not seen by a second store", err)
	}
	if r := wipe(t, g2); r.IsError {
		t.Fatalf("wipe with a grant: %s", r.Text())
	}
	if ok, _ := g2.Granted(ctx, "run_command", "rm -rf ~"); ok {
		t.Fatal("a grant of one command line covers another")
	}
	gs, err := g2.List(ctx)
	if err != nil || len(gs) != 2 || gs[0].Tool != "run_command" || gs[0].Command != "git log" ||
		gs[1].Tool != "wipe" || !gs[1].Created.Equal(first) {
		t.Fatalf("List: %+v, %v", gs, err)
	}
	if ok, err := g.Revoke(ctx, "wipe"); !ok || err != nil {
		t.Fatal("revoke found nothing", err)
	}
	if ok, _ := g2.Granted(ctx, "wipe", ""); ok {
		t.Fatal("revoked grant still holds")
	}
	if ok, _ := g.Revoke(ctx, "wipe"); ok {
		t.Fatal("revoked twice")
	}
}

// Directories are 0700 and records 0600, whatever the umask.
func TestGrantsPermissions(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	_, dir, g := wipeGranted(t)
	for _, d := range []string{filepath.Dir(dir), dir, g.Dir()} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want 0700", d, fi.Mode(), err)
		}
	}
	ents, _ := os.ReadDir(g.Dir())
	if len(ents) != 1 {
		t.Fatalf("records: %v", ents)
	}
	if fi, _ := ents[0].Info(); fi.Mode().Perm() != 0o600 {
		t.Errorf("record mode %v, want 0600", fi.Mode())
	}
}

// A grants directory other users may write, or that another user owns,
// is refused: they could grant calls for this user. Refused means the call
// that the grant would cover does not run.
func TestGrantsWritableByOthers(t *testing.T) {
	_, dir, g := wipeGranted(t)
	ctx := context.Background()
	for _, d := range []string{dir, g.Dir()} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.Granted(ctx, "wipe", ""); ok || err == nil || !strings.Contains(err.Error(), "other users") {
			t.Errorf("%s world-writable: Granted = %v, %v; want an error", d, ok, err)
		}
		if r := wipe(t, g); !r.IsError || !strings.Contains(r.Text(), "could not be read") {
			t.Errorf("%s world-writable: the call ran: %s", d, r.Text())
		}
		if err := g.AddGrant(ctx, policy.Grant{Tool: "other"}); err == nil {
			t.Errorf("%s world-writable: AddGrant wrote", d)
		}
		if _, err := g.List(ctx); err == nil {
			t.Errorf("%s world-writable: List did not refuse", d)
		}
		os.Chmod(d, 0o700)
	}
	if r := wipe(t, g); r.IsError {
		t.Fatalf("the grant once the directories are mended: %s", r.Text())
	}
}

func TestGrantsOfAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a directory another user's takes root")
	}
	_, dir, g := wipeGranted(t)
	ctx := context.Background()
	for _, d := range []string{dir, g.Dir()} {
		if err := os.Chown(d, 4242, 4242); err != nil {
			t.Fatal(err)
		}
		if ok, err := g.Granted(ctx, "wipe", ""); ok || err == nil || !strings.Contains(err.Error(), "belongs to user 4242") {
			t.Errorf("%s of another user: Granted = %v, %v; want an error", d, ok, err)
		}
		if r := wipe(t, g); !r.IsError {
			t.Errorf("%s of another user: the call ran", d)
		}
		os.Chown(d, 0, 0)
	}
}

// Grants kept inside the workspace could be written by what runs there:
// refused, nothing is created, also through a link out of the workspace
// and back in.
func TestGrantsInsideWorkspace(t *testing.T) {
	ws, _ := grantsSetup(t)
	link := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{filepath.Join(ws, ".local", "state", "lathe", "grants"), ws,
		filepath.Join(ws, ".lathe"), filepath.Join(link, "grants")} {
		if _, err := audit.OpenGrants(dir, ws); !errors.Is(err, audit.ErrGrantsInsideWorkspace) {
			t.Errorf("OpenGrants(%s): %v, want ErrGrantsInsideWorkspace", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, ".local")); err == nil {
		t.Error("the refused directory was created")
	}
}

// Grants are for one workspace, by real path: a copy of the workspace
// elsewhere has none, the same workspace through a link has them, and a
// record copied from another workspace's grants is an error, not a grant.
func TestGrantsPerWorkspace(t *testing.T) {
	ws, dir, g := wipeGranted(t)
	ctx := context.Background()
	other := filepath.Join(filepath.Dir(ws), "copy")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	og := openGrants(t, dir, other)
	if ok, err := og.Granted(ctx, "wipe", ""); ok || err != nil {
		t.Fatalf("another workspace: %v, %v", ok, err)
	}
	link := filepath.Join(t.TempDir(), "ws-link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	if ok, err := openGrants(t, dir, link).Granted(ctx, "wipe", ""); !ok || err != nil {
		t.Fatalf("the workspace through a link: %v, %v", ok, err)
	}
	// Copy the record into the other workspace's grants, under the name
	// it would have there.
	if err := og.AddGrant(ctx, policy.Grant{Tool: "keep"}); err != nil {
		t.Fatal(err)
	}
	src, _ := os.ReadDir(g.Dir())
	data, err := os.ReadFile(filepath.Join(g.Dir(), src[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(og.Dir(), src[0].Name()), data, 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := og.Granted(ctx, "wipe", ""); ok || err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("a record of another workspace: %v, %v; want an error", ok, err)
	}
	if gs, err := og.List(ctx); len(gs) != 1 || gs[0].Tool != "keep" || err == nil {
		t.Fatalf("List beside a corrupt record: %+v, %v", gs, err)
	}
}

// A record that is not a regular file, a link or a FIFO put in the store,
// is an error, and reading it does not hang.
func TestGrantsNotRegular(t *testing.T) {
	_, _, g := wipeGranted(t)
	ctx := context.Background()
	ents, _ := os.ReadDir(g.Dir())
	rec := filepath.Join(g.Dir(), ents[0].Name())
	moved := filepath.Join(t.TempDir(), "rec.json")
	if err := os.Rename(rec, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, rec); err != nil {
		t.Fatal(err)
	}
	if ok, err := g.Granted(ctx, "wipe", ""); ok || err == nil {
		t.Errorf("a linked record: %v, %v; want an error", ok, err)
	}
	os.Remove(rec)
	if err := syscall.Mkfifo(rec, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ok, err := g.Granted(ctx, "wipe", "")
		if ok {
			err = errors.New("granted")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO record: no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Granted hung on a FIFO record")
	}
}

// Grants an earlier lathe kept in the audit database are listed, so that a
// person can grant them again, and no longer honoured.
func TestLegacyGrants(t *testing.T) {
	s, path := open(t)
	ctx := context.Background()
	if gs, err := s.LegacyGrants(ctx); len(gs) != 0 || err != nil {
		t.Fatalf("a new database: %+v, %v", gs, err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE grants (tool TEXT NOT NULL, command TEXT NOT NULL DEFAULT '',
		created_ns INTEGER NOT NULL, PRIMARY KEY (tool, command));
		INSERT INTO grants VALUES ('wipe', '', 1), ('run_command', 'rm -rf ~', 2)`); err != nil {
		t.Fatal(err)
	}
	gs, err := s.LegacyGrants(ctx)
	if err != nil || len(gs) != 2 || gs[0].Tool != "run_command" || gs[0].Command != "rm -rf ~" || gs[1].Tool != "wipe" {
		t.Fatalf("LegacyGrants: %+v, %v", gs, err)
	}
	ws, dir := grantsSetup(t)
	e := newEngine(s, &policy.Policy{}, openGrants(t, dir, ws))
	defer e.Close()
	if r := e.Call(ctx, &tool.Call{Name: "wipe", Arguments: json.RawMessage(`{"path":"x"}`)}).Result; !r.IsError {
		t.Fatalf("a grant in the audit database was honoured: %s", r.Text())
	}
}

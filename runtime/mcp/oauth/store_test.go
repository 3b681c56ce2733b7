package oauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

func saved(t *testing.T) (*oauth.Store, *oauth.Record, string) {
	t.Helper()
	store := oauth.OpenStore(filepath.Join(t.TempDir(), "oauth"))
	r := &oauth.Record{Workspace: "/ws", Server: "notes", Resource: "https://notes.example/mcp", TokenURL: "https://as.example/token",
		ClientID: "c", AccessToken: "AT-secret", RefreshToken: "RT-secret"}
	if err := store.Save(r); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(store.Dir(), "*.json"))
	if len(files) != 1 {
		t.Fatalf("store holds %v, want one record", files)
	}
	return store, r, files[0]
}

func TestStoreIsPrivate(t *testing.T) {
	store, _, file := saved(t)
	di, _ := os.Stat(store.Dir())
	fi, _ := os.Stat(file)
	if di.Mode().Perm() != 0o700 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("store %v, record %v: want 0700 and 0600", di.Mode().Perm(), fi.Mode().Perm())
	}
	got, err := store.Load("/ws", "notes", "https://notes.example/mcp")
	if err != nil || got == nil || got.AccessToken != "AT-secret" {
		t.Fatalf("Load: %v, %v", got, err)
	}
}

func TestStoreRefusesWhatOthersCouldReadOrPlant(t *testing.T) {
	cases := map[string]func(t *testing.T, store *oauth.Store, file string){
		"record readable by others": func(t *testing.T, _ *oauth.Store, file string) {
			os.Chmod(file, 0o644)
		},
		"directory open to others": func(t *testing.T, store *oauth.Store, _ string) {
			os.Chmod(store.Dir(), 0o755)
		},
		"record is a link": func(t *testing.T, _ *oauth.Store, file string) {
			other := filepath.Join(t.TempDir(), "planted.json")
			b, _ := os.ReadFile(file)
			os.WriteFile(other, b, 0o600)
			os.Remove(file)
			if err := os.Symlink(other, file); err != nil {
				t.Fatal(err)
			}
		},
		"record is a FIFO": func(t *testing.T, _ *oauth.Store, file string) {
			os.Remove(file)
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Skip("no FIFOs here:", err)
			}
		},
		"record of another user": func(t *testing.T, _ *oauth.Store, file string) {
			if os.Geteuid() != 0 {
				t.Skip("making a file of another user needs root")
			}
			if err := os.Chown(file, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
		"record of another key": func(t *testing.T, store *oauth.Store, file string) {
			// A record copied under the name of another key (another
			// workspace's file renamed into place) is not taken for it.
			b, _ := os.ReadFile(file)
			os.WriteFile(file, []byte(strings.Replace(string(b), `"/ws"`, `"/elsewhere"`, 1)), 0o600)
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			store, _, file := saved(t)
			spoil(t, store, file)
			got, err := store.Load("/ws", "notes", "https://notes.example/mcp")
			if err == nil {
				t.Fatalf("Load took the record (%v)", got)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
}

func TestStoreInsideWorkspaceIsRefused(t *testing.T) {
	ws := t.TempDir()
	if err := oauth.OpenStore(filepath.Join(ws, ".state", "lathe", "oauth")).CheckOutside(ws); err == nil {
		t.Error("a store inside the workspace was accepted")
	}
	// A link in the workspace that leads out is still inside by its name:
	// a tool could point it back in.
	out := t.TempDir()
	os.Symlink(out, filepath.Join(ws, "out"))
	if err := oauth.OpenStore(filepath.Join(ws, "out", "oauth")).CheckOutside(ws); err == nil {
		t.Error("a store reached through a link in the workspace was accepted")
	}
	// And a link outside that leads into the workspace is inside.
	in := filepath.Join(t.TempDir(), "in")
	os.Symlink(ws, in)
	if err := oauth.OpenStore(filepath.Join(in, "oauth")).CheckOutside(ws); err == nil {
		t.Error("a store whose path leads into the workspace was accepted")
	}
	if err := oauth.OpenStore(filepath.Join(out, "oauth")).CheckOutside(ws); err != nil {
		t.Errorf("a store outside the workspace: %v", err)
	}
}

func TestStoreListAndDelete(t *testing.T) {
	store, r, _ := saved(t)
	list, err := store.List("/ws")
	if err != nil || len(list) != 1 || list[0].Server != "notes" {
		t.Fatalf("List: %v, %v", list, err)
	}
	if list, _ := store.List("/other"); len(list) != 0 {
		t.Errorf("List of another workspace: %v", list)
	}
	if ok, err := store.Delete(r.Workspace, r.Server, r.Resource); !ok || err != nil {
		t.Fatalf("Delete: %v, %v", ok, err)
	}
	if got, err := store.Load(r.Workspace, r.Server, r.Resource); got != nil || err != nil {
		t.Errorf("after Delete, Load: %v, %v", got, err)
	}
}

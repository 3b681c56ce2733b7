package cli

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/internal/oauthtest"
)

// browserStream is the standard error of lathe auth login as a person
// reads it: the authorization URL it shows is opened at once, in a
// browser that follows the authorization server's redirect.
type browserStream struct {
	ctx context.Context
	mu  sync.Mutex
	buf bytes.Buffer
	err error
}

var authURL = regexp.MustCompile(`http://\S+/authorize\?\S+`)

func (b *browserStream) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	had := authURL.FindString(b.buf.String())
	b.buf.Write(p)
	if u := authURL.FindString(b.buf.String()); u != "" && had == "" {
		go func() {
			err := oauthtest.Browser()(b.ctx, u)
			b.mu.Lock()
			b.err = err
			b.mu.Unlock()
		}()
	}
	return len(p), nil
}

func (b *browserStream) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAuthLoginStatusCallLogout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	as := oauthtest.NewAuthServer(t)
	rs := oauthtest.NewResourceServer(t, as)
	tmp := t.TempDir()
	ws := filepath.Join(tmp, "ws")
	os.MkdirAll(ws, 0o755)
	t.Setenv("HOME", filepath.Join(tmp, "home"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	os.MkdirAll(filepath.Join(tmp, "config", "lathe"), 0o700)
	os.WriteFile(filepath.Join(tmp, "config", "lathe", "config.toml"), []byte("[mcp.notes]\nurl = \""+rs.URL+"\"\n"), 0o600)

	run := func(args ...string) (int, string, string) {
		var out bytes.Buffer
		errs := &browserStream{ctx: ctx}
		code := Run(ctx, append([]string{"--workspace", ws}, args...), Streams{In: strings.NewReader(""), Out: &out, Err: errs})
		return code, out.String(), errs.String()
	}

	code, out, errs := run("auth", "login", "notes")
	if code != 0 || !strings.Contains(out, "Logged in to notes") {
		t.Fatalf("auth login: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if !strings.Contains(errs, "Open this URL") {
		t.Errorf("auth login did not show the URL: %s", errs)
	}
	files, _ := filepath.Glob(filepath.Join(tmp, "state", "lathe", "oauth", "*.json"))
	if len(files) != 1 {
		t.Fatalf("token files %v, want one in the state directory", files)
	}
	as.Mu.Lock()
	var token string
	for tok := range as.Valid {
		token = tok
	}
	as.Mu.Unlock()

	code, out, errs = run("auth", "status")
	if code != 0 || !strings.Contains(out, "notes\t"+rs.URL+"\tlogged in") {
		t.Errorf("auth status: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = run("call", "notes__whoami", "{}")
	if code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("call with the stored token: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, errs = run("config")
	if strings.Contains(out+errs, token) {
		t.Errorf("lathe config shows the token")
	}
	// Nothing of the token is in the workspace, where a tool could read it.
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(token)) {
				t.Errorf("%s holds the token", p)
			}
		}
		return nil
	})

	code, out, errs = run("auth", "logout", "notes")
	if code != 0 || !strings.Contains(out, "Logged out of notes") {
		t.Errorf("auth logout: exit %d\nstdout: %s\nstderr: %s", code, out, errs)
	}
	code, out, _ = run("auth", "status")
	if !strings.Contains(out, "notes\t"+rs.URL+"\tnot logged in") {
		t.Errorf("auth status after logout: %s", out)
	}
	code, out, errs = run("call", "notes__whoami", "{}")
	if code == 0 || !strings.Contains(errs, "lathe auth login notes") {
		t.Errorf("call after logout: exit %d, stderr %s; want a failure that says how to log in", code, errs)
	}
}

func TestAuthLoginUnknownServer(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("HOME", tmp)
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(tmp, "config"))
	var out, errs bytes.Buffer
	code := Run(context.Background(), []string{"--workspace", tmp, "auth", "login", "nope"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errs})
	if code != ExitUsage || !strings.Contains(errs.String(), "no MCP server nope") {
		t.Errorf("exit %d, stderr %s", code, errs.String())
	}
}

func TestPrintableURL(t *testing.T) {
	got := printableURL("https://as.example/auth\x1b]0;owned\x07?x=\u202egood")
	if want := "https://as.example/auth%1B]0;owned%07?x=%E2%80%AEgood"; got != want {
		t.Errorf("printableURL = %q, want %q", got, want)
	}
}

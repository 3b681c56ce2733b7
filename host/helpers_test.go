package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/host"
)

// fixture is a workspace with a few files, and a directory outside it
// holding a secret.
type fixture struct {
	ws, outside string
}

func newFixture(t *testing.T) fixture { return newFixtureF(t) }

// newFixtureF makes the fixture for a test or a fuzz target.
func newFixtureF(t testing.TB) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{ws: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for p, data := range map[string]string{
		"ws/src/main.go":     "package main\n",
		"ws/src/sub/a.txt":   "a\n",
		"ws/secret/key":      "workspace secret\n",
		"ws/out/old.txt":     "old\n",
		"ws/lathe.toml":      "# configuration\n",
		"ws/.lathe/audit.db": "audit\n",
		"outside/secret":     "outside secret\n",
		"outside/dir/file":   "outside file\n",
	} {
		full := filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) host(t *testing.T, perms host.Permissions) *host.Host {
	t.Helper()
	return f.hostWith(t, host.Config{Perms: perms})
}

func (f fixture) hostWith(t *testing.T, cfg host.Config) *host.Host {
	t.Helper()
	if cfg.Tool == "" {
		cfg.Tool = "probe"
	}
	cfg.Workspace = f.ws
	h, err := host.New(cfg)
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func (f fixture) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.ws, rel))
	if err != nil {
		t.Fatalf("reading %s: %v", rel, err)
	}
	return string(b)
}

// testCtx is a call's context with a deadline, so that no test hangs.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call runs one request and returns its result decoded into out (which
// may be nil), or the host's error.
func call(t *testing.T, s *host.Session, method string, params any, out any) *host.Error {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Do(testCtx(t), method, raw)
	if err != nil {
		var he *host.Error
		if !errors.As(err, &he) {
			t.Fatalf("%s: error %T %v is not a *host.Error", method, err, err)
		}
		return he
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			t.Fatalf("%s: result %s does not decode: %v", method, res, err)
		}
	}
	return nil
}

// wantCode fails unless e has code, and its message holds each of words.
func wantCode(t *testing.T, what string, e *host.Error, code int, words ...string) {
	t.Helper()
	if e == nil {
		t.Fatalf("%s: succeeded, want error code %d", what, code)
	}
	if e.Code != code {
		t.Fatalf("%s: code %d (%s), want %d", what, e.Code, e.Message, code)
	}
	for _, w := range words {
		if !strings.Contains(e.Message, w) {
			t.Errorf("%s: message %q does not say %q", what, e.Message, w)
		}
	}
}

func wantOK(t *testing.T, what string, e *host.Error) {
	t.Helper()
	if e != nil {
		t.Fatalf("%s: code %d: %s", what, e.Code, e.Message)
	}
}

package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/server"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startServe runs lathe serve with args in a workspace until the test ends,
// and returns its URL and what it printed on stderr by then.
func startServe(t *testing.T, args ...string) (url, stderr string) {
	t.Helper()
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	// The token file goes to a state directory of the test's own, unless
	// the test chose one.
	if !strings.HasPrefix(os.Getenv("XDG_STATE_HOME"), os.TempDir()) {
		t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	}
	return startServeIn(t, ws, args...)
}

// startServeIn is startServe in the workspace ws.
func startServeIn(t *testing.T, ws string, args ...string) (url, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errb := &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- Run(ctx, append([]string{"--workspace", ws, "serve"}, args...),
			Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errb})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited with %d: %s", code, errb)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop")
		}
	})
	re := regexp.MustCompile(`serving MCP at (\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			// A wildcard address is reached here through loopback.
			u := strings.Replace(strings.Replace(m[1], "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
			return u, errb.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no address printed: %s", errb)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	return c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
}

// TestServeHTTPLoopbackNeedsToken: on a shared machine every local user
// reaches a loopback address, so it gets a token like any other: generated,
// printed, kept in a file only its owner can read, outside the workspace.
func TestServeHTTPLoopbackNeedsToken(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", state)
	url, stderr := startServe(t, "--http", "127.0.0.1:0")
	m := regexp.MustCompile(`Authorization: Bearer (\w+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token printed for a loopback address: %s", stderr)
	}
	token := m[1]
	for _, auth := range []string{"", "Bearer wrong", "Basic " + token, token} {
		if code := rawPost(t, url, auth); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q on loopback: status %d, want 401", auth, code)
		}
	}
	cs, err := connectHTTP(t, url, "bearer "+token)
	if err != nil {
		t.Fatalf("lowercase bearer scheme refused: %v", err)
	}
	defer cs.Close()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
	if err != nil || r.IsError || !strings.Contains(r.Content[0].(*sdk.TextContent).Text, "hello") {
		t.Fatalf("read_file: %v %+v", err, r)
	}

	fm := regexp.MustCompile(`token is in (\S+)`).FindStringSubmatch(stderr)
	if fm == nil {
		t.Fatalf("the token file is not named: %s", stderr)
	}
	file := fm[1]
	if !strings.HasPrefix(file, state+string(filepath.Separator)) {
		t.Errorf("token file %s is not under the state directory %s", file, state)
	}
	fi, err := os.Lstat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("token file mode %v, want -rw-------", fi.Mode())
	}
	di, err := os.Lstat(filepath.Dir(file))
	if err != nil || di.Mode() != fs.ModeDir|0o700 {
		t.Errorf("token directory: %v %v, want drwx------", di.Mode(), err)
	}
	if b, _ := os.ReadFile(file); strings.TrimSpace(string(b)) != token {
		t.Errorf("token file holds %q, want the printed token", b)
	}
}

// rawPost sends an MCP initialize with the Authorization header auth and
// returns the status.
func rawPost(t *testing.T, url, auth string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeTokenKept: a second lathe serve of the same workspace uses the
// token kept in the file, so that a client's configuration goes on working.
func TestServeTokenKept(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	ws := t.TempDir()
	_, first := startServeIn(t, ws, "--http", "127.0.0.1:0")
	_, second := startServeIn(t, ws, "--http", "127.0.0.1:0")
	re := regexp.MustCompile(`Authorization: Bearer (\w+)`)
	a, b := re.FindStringSubmatch(first), re.FindStringSubmatch(second)
	if a == nil || b == nil || a[1] != b[1] {
		t.Errorf("tokens of two serves of one workspace: %q, %q", a, b)
	}
	_, other := startServe(t, "--http", "127.0.0.1:0")
	if c := re.FindStringSubmatch(other); c == nil || a != nil && c[1] == a[1] {
		t.Errorf("another workspace shares the token: %q", c)
	}
}

// TestServeRefusesExposedTokenFile: a token file (or its directory) that
// another user can read, or that another user owns, is not used.
func TestServeRefusesExposedTokenFile(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	ws := t.TempDir()
	_, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0")
	fm := regexp.MustCompile(`token is in (\S+)`).FindStringSubmatch(stderr)
	if fm == nil {
		t.Fatalf("the token file is not named: %s", stderr)
	}
	file := fm[1]
	serve := func() (int, string) {
		errb := &bytes.Buffer{}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		code := Run(ctx, []string{"--workspace", ws, "serve", "--http", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errb})
		return code, errb.String()
	}
	os.Chmod(file, 0o644)
	if code, out := serve(); code == 0 || !strings.Contains(out, file) {
		t.Errorf("a token file readable by others was used: exit %d: %s", code, out)
	}
	os.Chmod(file, 0o600)
	os.Chmod(filepath.Dir(file), 0o755)
	if code, out := serve(); code == 0 || !strings.Contains(out, filepath.Dir(file)) {
		t.Errorf("a token directory open to others was used: exit %d: %s", code, out)
	}
	os.Chmod(filepath.Dir(file), 0o700)
	if os.Geteuid() == 0 {
		os.Chown(file, 65534, 65534)
		if code, out := serve(); code == 0 || !strings.Contains(out, file) {
			t.Errorf("a token file owned by another user was used: exit %d: %s", code, out)
		}
		os.Chown(file, 0, 0)
	}
	// A symbolic link in place of the file is not followed.
	os.Remove(file)
	target := filepath.Join(t.TempDir(), "planted")
	os.WriteFile(target, []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
	os.Symlink(target, file)
	if code, out := serve(); code == 0 || !strings.Contains(out, file) {
		t.Errorf("a symbolic link as the token file was used: exit %d: %s", code, out)
	}
}

// TestServeTokenOutsideWorkspace: when the state directory lies inside the
// workspace (a workspace that is the home directory), the token goes
// elsewhere or lathe refuses; it never lands where tools can read it.
func TestServeTokenOutsideWorkspace(t *testing.T) {
	ws := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(ws, ".local", "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	runtime := filepath.Join(t.TempDir(), "run")
	os.Mkdir(runtime, 0o700)
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	_, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0")
	fm := regexp.MustCompile(`token is in (\S+)`).FindStringSubmatch(stderr)
	if fm == nil || !strings.HasPrefix(fm[1], runtime+string(filepath.Separator)) {
		t.Errorf("token file not in the runtime directory: %s", stderr)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	errb := &bytes.Buffer{}
	code := Run(context.Background(), []string{"--workspace", ws, "serve", "--http", "127.0.0.1:0"},
		Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errb})
	if code == 0 || !strings.Contains(errb.String(), "--token") {
		t.Errorf("exit %d: %s", code, errb)
	}
	filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".token") {
			t.Errorf("a token file in the workspace: %s", p)
		}
		return nil
	})
}

// TestServeUnixSocket: a Unix socket only its owner can open is served
// without a token.
func TestServeUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "lathe.sock")
	url, _ := startServe(t, "--http", "unix:"+sock)
	if url != "unix:"+sock {
		t.Fatalf("served at %s", url)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode()&fs.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v, want a socket of mode 0600", fi.Mode(), err)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://localhost" + server.Path, MaxRetries: -1,
		HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
}

// TestServeSlowHeader: a client that sends its request header a byte at a
// time is cut off by the header timeout.
func TestServeSlowHeader(t *testing.T) {
	defer func(d time.Duration) { headerTimeout = d }(headerTimeout)
	headerTimeout = 300 * time.Millisecond
	url, stderr := startServe(t, "--http", "127.0.0.1:0")
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), server.Path)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err, stderr)
	}
	defer conn.Close()
	start := time.Now()
	go func() {
		for _, b := range []byte("POST /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: " + strings.Repeat("a", 200)) {
			if _, err := conn.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	// The server closing a connection whose request it has not read may
	// reset it rather than end it: either way it is closed. Only the read
	// deadline firing means it was held open.
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("the connection of a slow header was not closed within 10 s: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a slow header held the connection for %v", d)
	}
}

func TestServeHTTPToken(t *testing.T) {
	url, stderr := startServe(t, "--http", "0.0.0.0:0")
	m := regexp.MustCompile(`Authorization: Bearer (\w+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token printed for a non-loopback address: %s", stderr)
	}
	if _, err := connectHTTP(t, url, ""); err == nil {
		t.Error("connected without the token")
	}
	cs, err := connectHTTP(t, url, "Bearer "+m[1])
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()

	url2, _ := startServe(t, "--http", "0.0.0.0:0", "--token", "given")
	if cs, err := connectHTTP(t, url2, "Bearer given"); err != nil {
		t.Error(err)
	} else {
		cs.Close()
	}
}

func TestServeBadAddress(t *testing.T) {
	errb := &bytes.Buffer{}
	code := Run(context.Background(), []string{"serve", "--http", "nonsense"}, Streams{In: strings.NewReader(""),
		Out: &bytes.Buffer{}, Err: errb})
	if code != ExitUsage || !strings.Contains(errb.String(), "HOST:PORT") {
		t.Errorf("exit %d: %s", code, errb)
	}
}

// TestServeManyCallsRecorded makes 600 calls at once through lathe serve
// over HTTP: none is refused, and the audit log holds each, finished.
func TestServeManyCallsRecorded(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(t.TempDir(), "config"))
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644)
	url, stderr := startServeIn(t, ws, "--http", "127.0.0.1:0")
	m := regexp.MustCompile(`Authorization: Bearer (\w+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no token printed: %s", stderr)
	}
	cs, err := connectHTTP(t, url, "Bearer "+m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const n = 600
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	for range n {
		wg.Go(func() {
			r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
			if err != nil || r.IsError {
				mu.Lock()
				failures = append(failures, fmt.Sprint(err, r))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the calls did not end within two minutes")
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d calls failed, the first: %s", len(failures), n, failures[0])
	}
	s, err := audit.Open(filepath.Join(ws, audit.DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.List(context.Background(), audit.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, r := range recs {
		if r.Status == audit.StatusDone && r.Outcome == "ok" && r.Tool == "read_file" {
			done++
		}
	}
	if len(recs) != n || done != n {
		t.Fatalf("%d records, %d of them finished ok; want %d, all finished", len(recs), done, n)
	}
}

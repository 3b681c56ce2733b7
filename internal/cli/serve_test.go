package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	re := regexp.MustCompile(`serving MCP at (http://\S+)`)
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
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	return c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{token}}}, nil)
}

func TestServeHTTPLoopback(t *testing.T) {
	url, stderr := startServe(t, "--http", "127.0.0.1:0")
	if strings.Contains(stderr, "Bearer") {
		t.Errorf("a token was made for a loopback address: %s", stderr)
	}
	cs, err := connectHTTP(t, url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
	if err != nil || r.IsError || !strings.Contains(r.Content[0].(*sdk.TextContent).Text, "hello") {
		t.Fatalf("read_file: %v %+v", err, r)
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
	cs, err := connectHTTP(t, url, m[1])
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()

	url2, _ := startServe(t, "--http", "0.0.0.0:0", "--token", "given")
	if cs, err := connectHTTP(t, url2, "given"); err != nil {
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

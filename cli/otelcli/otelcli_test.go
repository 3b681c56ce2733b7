package otelcli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/lathe-tools/lathe/cli"
	_ "github.com/lathe-tools/lathe/cli/otelcli"
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

// workspace makes a workspace with a file to read, and keeps the user's
// configuration and state out of the test.
func workspace(t *testing.T) string {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("s3cret file content\n"), 0o644)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(ws, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(k, "")
	}
	return ws
}

// TestCallExportsSpan: lathe call with an OTLP endpoint in the environment
// exports its call's span before it exits, to a receiver that decodes it;
// the file's content, the call's result, does not leave.
func TestCallExportsSpan(t *testing.T) {
	ws := workspace(t)
	var mu sync.Mutex
	var names []string
	var raw []byte
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		raw = append(raw, body...)
		mu.Unlock()
		if r.URL.Path == "/v1/traces" {
			var req coltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				t.Errorf("undecodable export: %v", err)
			}
			mu.Lock()
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						names = append(names, s.Name)
					}
				}
			}
			mu.Unlock()
		}
		w.WriteHeader(200)
	}))
	defer col.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.URL)
	t.Setenv("OTEL_METRICS_EXPORTER", "none")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := cli.Run(ctx, []string{"--workspace", ws, "call", "read_file", `{"path":"hello.txt"}`},
		cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errb})
	if ctx.Err() != nil {
		t.Fatal("lathe call hung")
	}
	if code != 0 || !strings.Contains(out.String(), "s3cret file content") {
		t.Fatalf("lathe call: exit %d: %s %s", code, out.String(), errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(names, ","), "execute_tool read_file") {
		t.Errorf("the collector got spans %v, not the call's", names)
	}
	if bytes.Contains(raw, []byte("s3cret file content")) {
		t.Error("the call's result reached the collector")
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMetrics: lathe serve --http serves /metrics behind its bearer
// token, and the scrape counts the calls its clients made.
func TestServeMetrics(t *testing.T) {
	ws := workspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	errb := &syncBuffer{}
	done := make(chan int)
	go func() {
		done <- cli.Run(ctx, []string{"--workspace", ws, "serve", "--http", "127.0.0.1:0", "--token", "tok"},
			cli.Streams{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: errb})
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("serve did not stop in 10s")
		}
	}()
	re := regexp.MustCompile(`serving MCP at http://(\S+)/mcp`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve printed no address in 10s: %s", errb)
		}
		time.Sleep(10 * time.Millisecond)
	}

	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(cctx, &sdk.StreamableClientTransport{
		Endpoint: "http://" + addr + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer("tok")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || r.IsError {
			t.Fatalf("read_file: %v %+v", err, r)
		}
	}
	cs.Close()

	get := func(token string) (int, string) {
		req, _ := http.NewRequestWithContext(cctx, "GET", "http://"+addr+"/metrics", nil)
		resp, err := (&http.Client{Transport: bearer(token)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	if code, _ := get("wrong"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong token: %d, want 401", code)
	}
	code, body := get("tok")
	if code != 200 {
		t.Fatalf("/metrics with the token: %d: %s", code, body)
	}
	if !regexp.MustCompile(`lathe_call_duration_seconds_count\{[^}]*gen_ai_tool_name="read_file"[^}]*lathe_outcome="ok"[^}]*\} 2`).MatchString(body) {
		t.Errorf("the scrape does not count the two calls of read_file:\n%s", body)
	}
	if strings.Contains(body, "s3cret") {
		t.Error("a result reached the metrics")
	}
}

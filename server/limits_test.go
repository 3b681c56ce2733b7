package server_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/server"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func serveHTTP(t *testing.T, opts server.HTTPOptions) *httptest.Server {
	t.Helper()
	srv := server.New(newEngine(t, testTools()...), server.Options{})
	ts := httptest.NewServer(srv.Handler(opts))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		srv.Close()
	})
	return ts
}

func postInit(t *testing.T, url, auth string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/mcp", body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestBearerAnyCase: the auth scheme is case-insensitive (RFC 9110), the
// token is not.
func TestBearerAnyCase(t *testing.T) {
	ts := serveHTTP(t, server.HTTPOptions{Token: "s3cret"})
	for _, c := range []struct {
		auth string
		want int
	}{
		{"Bearer s3cret", 200},
		{"bearer s3cret", 200},
		{"BEARER s3cret", 200},
		{"Bearer  s3cret ", 200},
		{"Bearer S3CRET", 401},
		{"Basic s3cret", 401},
		{"Bearers3cret", 401},
		{"s3cret", 401},
		{"Bearer s3cret2", 401},
		{"", 401},
	} {
		if got, body := postInit(t, ts.URL, c.auth, strings.NewReader(initBody)); got != c.want {
			t.Errorf("Authorization %q: status %d, want %d: %s", c.auth, got, c.want, body)
		}
	}
}

func connectHTTP(ts *httptest.Server) (*sdk.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	// Sessions: a client of MCP 2026-07-28 over HTTP has none.
	return c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// TestSessionCap: past the cap, a new session is refused with a clear 503;
// the sessions already open go on working, and ending one makes room.
func TestSessionCap(t *testing.T) {
	ts := serveHTTP(t, server.HTTPOptions{MaxSessions: 2})
	var open []*sdk.ClientSession
	for i := range 2 {
		cs, err := connectHTTP(ts)
		if err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
		open = append(open, cs)
	}
	defer func() {
		for _, cs := range open {
			cs.Close()
		}
	}()
	if cs, err := connectHTTP(ts); err == nil {
		cs.Close()
		t.Fatal("a third session opened past a cap of 2")
	}
	code, body := postInit(t, ts.URL, "", strings.NewReader(initBody))
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "too many sessions") {
		t.Errorf("past the cap: status %d: %s", code, body)
	}
	if r := callTool(t, open[0], "weather", map[string]any{"city": "Oslo"}); r.IsError {
		t.Errorf("an open session stopped working: %s", text(r))
	}
	open[1].Close()
	open = open[:1]
	waitFor(t, func() bool {
		cs, err := connectHTTP(ts)
		if err != nil {
			return false
		}
		open = append(open, cs)
		return true
	}, "a session to open after one ended")
}

// TestSlowBodyCutOff sends a request whose body dribbles in a byte at a
// time (slowloris): the server must answer 408 and drop the connection
// within its body timeout, not wait for the rest.
func TestSlowBodyCutOff(t *testing.T) {
	ts := serveHTTP(t, server.HTTPOptions{Token: "t", BodyTimeout: 300 * time.Millisecond})
	for _, auth := range []string{"Bearer t", "Bearer wrong"} {
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", ts.Listener.Addr(), auth, 1000)
		stop := make(chan struct{})
		go func() {
			for i := 0; i < 1000; i++ {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			close(stop)
			t.Fatalf("%s: no response to a slow body within 10 s: %v", auth, err)
		}
		resp.Body.Close()
		want := http.StatusRequestTimeout
		if auth != "Bearer t" {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", auth, resp.StatusCode, want)
		}
		// The connection must then end: the server does not go on reading.
		// It ends with EOF or, since the server closes with the client's
		// bytes unread, with a reset; only the read deadline means it
		// stayed open.
		if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the connection stayed open after the response: %v", auth, err)
		}
		close(stop)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: a slow body held the connection for %v", auth, d)
		}
	}
}

// TestHugeBody: a body past the cap is refused, with or without a length.
func TestHugeBody(t *testing.T) {
	ts := serveHTTP(t, server.HTTPOptions{MaxBodyBytes: 1 << 20})
	big := strings.NewReader(strings.Repeat(" ", 2<<20) + initBody)
	if code, body := postInit(t, ts.URL, "", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB with a length: status %d: %s", code, body)
	}
	// io.MultiReader hides the length: the body goes chunked.
	chunked := io.MultiReader(strings.NewReader(strings.Repeat(" ", 2<<20)), strings.NewReader(initBody))
	if code, body := postInit(t, ts.URL, "", chunked); code != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB chunked: status %d: %s", code, body)
	}
	if code, body := postInit(t, ts.URL, "", strings.NewReader(initBody)); code != 200 {
		t.Errorf("a small body: status %d: %s", code, body)
	}
}

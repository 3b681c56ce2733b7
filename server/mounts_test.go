package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/server"
)

// A handler mounted beside MCP on a loopback listener must not answer a
// request sent under a foreign name (DNS rebinding: a page of evil.example
// whose name now resolves to 127.0.0.1), nor a request from a foreign
// origin; a request under a loopback name reaches it.
func TestMountsRefuseReboundNames(t *testing.T) {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	srv := server.New(e, server.Options{Name: "lathe", Version: "test"})
	defer srv.Close()
	reached := 0
	h := srv.Handler(server.HTTPOptions{Mounts: map[string]http.Handler{
		"/page/": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; io.WriteString(w, "page") }),
	}})
	ts := httptest.NewServer(h)
	defer ts.Close()
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(host, origin string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+"/page/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := do("evil.example", ""); got != http.StatusMisdirectedRequest {
		t.Errorf("Host evil.example: status %d, want %d", got, http.StatusMisdirectedRequest)
	}
	if got := do("", "http://evil.example"); got != http.StatusForbidden {
		t.Errorf("Origin evil.example: status %d, want %d", got, http.StatusForbidden)
	}
	if reached != 0 {
		t.Fatalf("the mounted handler answered %d foreign requests", reached)
	}
	if got := do("localhost", ""); got != http.StatusOK || reached != 1 {
		t.Errorf("Host localhost: status %d, reached %d times; want 200, once", got, reached)
	}
}

package web_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lathe-tools/lathe/server/web"
)

// The page is one handler; lathe serve mounts it at "/" beside the HTTP
// API (server.HTTPOptions.Mounts), which the page reads everything from.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("/", web.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	fmt.Println(resp.Header.Get("Content-Security-Policy") == web.CSP)
	// Output:
	// 200 OK text/html; charset=utf-8
	// true
}

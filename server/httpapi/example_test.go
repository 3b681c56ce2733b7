package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/server/httpapi"
	"github.com/lathe-tools/lathe/tool"
)

// The API mounted beside MCP, as lathe serve mounts it, and a program
// listing the tools with the bearer token.
func Example() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "add", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })))
	api, err := httpapi.New(httpapi.Options{Engine: e, Token: "secret"})
	if err != nil {
		panic(err)
	}
	defer api.Close()
	srv := httptest.NewServer(server.New(e, server.Options{}).Handler(server.HTTPOptions{Token: "secret",
		Mounts: map[string]http.Handler{"/api/": api}}))
	defer srv.Close()

	req, _ := http.NewRequest("GET", srv.URL+"/api/tools", nil)
	req.Header.Set("Authorization", "Bearer secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var out struct{ Tools []httpapi.Tool }
	json.NewDecoder(resp.Body).Decode(&out)
	for _, t := range out.Tools {
		fmt.Println(t.Name, t.Policy.Decision)
	}
	// Output:
	// add allow
}

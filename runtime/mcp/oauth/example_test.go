package oauth_test

import (
	"fmt"
	"log"

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

// A server over HTTP authorized with the token lathe auth login kept: the
// handler offers it, refreshes it as it expires, and saves the new one.
func ExampleNewHandler() {
	dir, err := oauth.DefaultDir()
	if err != nil {
		log.Fatal(err)
	}
	h, err := oauth.NewHandler(oauth.Options{
		Workspace: "/home/ada/project",
		Server:    "notes",
		URL:       "https://notes.example.invalid/mcp",
		Store:     oauth.OpenStore(dir),
		LoginHint: "run lathe auth login notes",
	})
	if err != nil {
		log.Fatal(err)
	}
	_ = mcp.Config{Name: "notes", URL: "https://notes.example.invalid/mcp", OAuth: h}
}

// A record prints without its secrets.
func ExampleRecord() {
	r := &oauth.Record{Server: "notes", Resource: "https://notes.example.invalid/mcp", AccessToken: "at-…", RefreshToken: "rt-…"}
	fmt.Println(r)
	// Output: token of notes (https://notes.example.invalid/mcp), refreshable
}

package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/host"
)

// A tool granted src/ reads a file there, and is denied one outside it with
// the entry a person would add to allow it.
func Example() {
	ws, _ := os.MkdirTemp("", "host-example")
	defer os.RemoveAll(ws)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.WriteFile(filepath.Join(ws, "src", "hello.txt"), []byte("hello"), 0o644)
	os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("private"), 0o644)

	h, err := host.New(host.Config{Tool: "greet", Workspace: ws, Perms: host.Permissions{Read: []string{"src/"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer h.Close()
	ctx := context.Background() // a call's context, with its deadline and hooks
	s := h.Begin(ctx)
	defer s.End()

	res, err := s.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"src/hello.txt"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	var r host.ReadResult
	json.Unmarshal(res, &r)
	fmt.Printf("%s (eof %v)\n", r.Data, r.EOF)

	_, err = s.Do(ctx, host.MethodRead, json.RawMessage(`{"path":"src/../notes.txt"}`))
	fmt.Println(err.(*host.Error).Code == host.CodeDenied)
	fmt.Println(err)
	// Output:
	// hello (eof true)
	// true
	// read of "notes.txt" (which "src/../notes.txt" resolves to) is outside the permissions of greet: to allow it, a person adds "notes.txt" to read in [tools.greet]
}

package load_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/tool"
)

// Open a workspace and call one of its tools, as lathe call does.
func Example() {
	dir, err := os.MkdirTemp("", "workspace")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	// The workspace's lathe.toml hides write_file. A file that only
	// narrows what lathe allows applies without anyone trusting it.
	os.WriteFile(filepath.Join(dir, "lathe.toml"), []byte("[tools.write_file]\nenable = false\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("buy milk\n"), 0o644)

	ctx := context.Background()
	ws, err := load.Open(ctx, load.Options{Dir: dir})
	if err != nil {
		panic(err)
	}
	defer ws.Close()

	_, hasWrite := ws.Engine.Lookup("write_file")
	fmt.Println("write_file:", hasWrite)
	out := ws.Engine.Call(ctx, &tool.Call{Name: "read_file", Arguments: json.RawMessage(`{"path":"notes.txt"}`)})
	fmt.Print(out.Result.Text())
	// Output:
	// write_file: false
	// buy milk
}

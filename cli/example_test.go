package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/lathe-tools/lathe/cli"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// A lathe binary with a tool of its own: the tool is called like the
// standard ones, from the same command line.
func Example() {
	greet := builtin.Must(builtin.Func(tool.Definition{Name: "greet", Summary: "Greet someone."},
		func(ctx context.Context, in struct {
			Name string `json:"name"`
		}) (string, error) {
			return "Hello, " + in.Name + "!", nil
		}))

	dir, _ := os.MkdirTemp("", "lathe-example-")
	defer os.RemoveAll(dir)
	var out, errw strings.Builder
	code := cli.Run(context.Background(), []string{"--workspace", dir, "call", "greet", "name=Ada"},
		cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errw}, greet)
	fmt.Print(out.String())
	fmt.Println("exit", code)
	// Output:
	// Hello, Ada!
	// exit 0
}

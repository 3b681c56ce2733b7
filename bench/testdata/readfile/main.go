// Command readfile is the tool of the VFS benchmark: it reads a file of the
// workspace, through the host API when it runs as a VFS tool and with its
// own system calls otherwise, and returns its size.
package main

import (
	"context"
	"os"

	"github.com/lathe-tools/lathe/sdk"
)

type in struct {
	Path string `json:"path"`
}

type out struct {
	Size int `json:"size"`
}

func main() {
	sdk.Serve(sdk.Func(sdk.Definition{Name: "read_size", Summary: "Read a file and return its size."},
		func(ctx context.Context, in in) (out, error) {
			var b []byte
			var err error
			if h, ok := sdk.Host(ctx); ok {
				b, err = h.ReadFile(ctx, in.Path)
			} else {
				b, err = os.ReadFile(in.Path)
			}
			return out{Size: len(b)}, err
		}))
}

// Package cli is lathe's command line, for programs that build a lathe
// binary of their own: the same commands, flags and exit codes as lathe,
// with builtin tools of the program's registered beside the standard ones.
//
//	func main() {
//		os.Exit(cli.Main(builtin.Must(builtin.Func(tool.Definition{Name: "greet"}, greet))))
//	}
//
// The tools take part in everything the command line does: the workspace's
// lathe.toml configures them like any builtin (enable, timeout, policy),
// `lathe serve` serves them, and their calls are audited. A program that
// wants the engine rather than the command line opens it with package
// load, which is what every command of this package goes through.
package cli

import (
	"context"
	"io"

	internal "github.com/lathe-tools/lathe/internal/cli"
	"github.com/lathe-tools/lathe/tool"
)

// Streams are the standard streams of one run.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs lathe with the process's arguments and standard streams, and
// returns the exit code (docs/cli.md lists them; `lathe --help` too). Ctrl-C
// and SIGTERM cancel what runs. tools are registered beside the standard
// tools.
func Main(tools ...tool.Tool) int { return internal.MainWith(tools...) }

// Run runs lathe with args (without the program's name) and the streams s,
// and returns the exit code; cancelling ctx cancels what runs. tools are
// registered beside the standard tools.
func Run(ctx context.Context, args []string, s Streams, tools ...tool.Tool) int {
	return internal.Run(ctx, args, internal.Streams{In: s.In, Out: s.Out, Err: s.Err}, tools...)
}

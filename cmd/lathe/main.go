// Command lathe lists, describes and calls the tools of a workspace.
//
// Run `lathe --help` for the commands; docs/cli.md has the whole reference.
package main

import (
	"os"

	"github.com/lathe-tools/lathe/cli"
)

func main() { os.Exit(cli.Main()) }

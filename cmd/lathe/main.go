// Command lathe lists, describes and calls the tools of a workspace.
//
// Run `lathe --help` for the commands; docs/cli.md has the whole reference.
package main

import (
	"os"

	"github.com/lathe-tools/lathe/cli"
	// OpenTelemetry, as the OTEL_* variables say (docs/telemetry.md).
	_ "github.com/lathe-tools/lathe/cli/otelcli"
	// Tool calls sent to workers through Temporal (docs/temporal.md).
	_ "github.com/lathe-tools/lathe/cli/temporalcli"
)

func main() { os.Exit(cli.Main()) }

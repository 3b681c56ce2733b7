package cli

import (
	"fmt"
	"strings"
)

// docsURL is where the documentation of the commands, the configuration
// and the protocol lives; `lathe --help` points there, since a binary
// installed alone carries no docs/ directory.
const docsURL = "https://github.com/lathe-tools/lathe/tree/main/docs"

// exitCodes describes each exit code for `lathe --help`, in the words of
// docs/cli.md's table. TestHelpListsEveryExitCode checks that every Exit
// constant of exitcode.go is here and in docs/cli.md.
var exitCodes = []struct {
	code    int
	meaning string
}{
	{ExitOK, "success"},
	{ExitToolError, "tool_error: the tool ran and reported a failure"},
	{ExitUsage, "usage: an unknown command or flag, wrong arguments"},
	{ExitConfig, "a configuration file is invalid (the message names file and line)"},
	{ExitUnknownTool, "unknown_tool: no tool has that name"},
	{ExitInvalidArgs, "invalid_arguments: the arguments do not fit the tool's schema"},
	{ExitDenied, "denied: policy or a person refused the call"},
	{ExitTimeout, "timeout: the call ran past its deadline"},
	{ExitCancelled, "cancelled: the call was cancelled (Ctrl-C)"},
	{ExitRuntimeFailure, "runtime_failure: a panic, a crashed process, a lost connection"},
	{ExitNeedsInput, "a tool asked a question that could not be answered here"},
	{ExitUntrusted, "the workspace configuration needs `lathe trust`"},
	{ExitInternalFailure, "an internal failure of lathe itself"},
}

// rootLong is the long help of the lathe command: what it does, where the
// documentation is, and what its exit codes mean.
func rootLong() string {
	var b strings.Builder
	b.WriteString("lathe runs tools for LLM agents: it validates arguments against each tool's schema,\n" +
		"applies policy and limits, and returns results a model can read.\n\n" +
		"Documentation: " + docsURL + "\n" +
		"  cli.md (the commands), config.md (lathe.toml), policy.md, protocol.md (writing a tool), mcp.md\n\n" +
		"Exit codes:\n")
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %3d  %s\n", c.code, c.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

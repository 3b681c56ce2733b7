package mcpconformance

import "net"

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// The baseline: the scenarios that pass, each of which must go on passing
// (a regression names it), and those that fail, each with its reason. A
// scenario that starts to pass is reported, to be moved to its list; one
// in neither list fails the test, so that a new scenario of the suite is
// looked at. docs/mcp.md ("Conformance") says the same.

// serverPass lists the server scenarios (suite active) that pass through
// lathe: all of them.
var serverPass = []string{
	"server-initialize",
	"logging-set-level",
	"ping",
	"completion-complete",
	"tools-list",
	"tools-call-simple-text",
	"tools-call-image",
	"tools-call-audio",
	"tools-call-embedded-resource",
	"tools-call-mixed-content",
	"tools-call-with-logging",
	"tools-call-error",
	"tools-call-with-progress",
	"tools-call-sampling",
	"tools-call-elicitation",
	"elicitation-sep1034-defaults",
	"server-sse-multiple-streams",
	"elicitation-sep1330-enums",
	"resources-list",
	"resources-read-text",
	"resources-read-binary",
	"resources-templates-read",
	"resources-subscribe",
	"resources-unsubscribe",
	"prompts-list",
	"prompts-get-simple",
	"prompts-get-with-args",
	"prompts-get-embedded-resource",
	"prompts-get-with-image",
	"dns-rebinding-protection",
}

// serverExpectedFail names the server scenarios that fail through lathe,
// with the reason: none.
var serverExpectedFail = map[string]string{}

// clientPass lists the client scenarios (suite core) that lathe's MCP
// client passes: all of them.
var clientPass = []string{
	"initialize",
	"tools_call",
	"elicitation-sep1034-client-defaults",
	"sse-retry",
	"auth/metadata-default",
	"auth/metadata-var1",
	"auth/metadata-var2",
	"auth/metadata-var3",
	"auth/basic-cimd",
	"auth/scope-from-www-authenticate",
	"auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined",
	"auth/scope-step-up",
	"auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic",
	"auth/token-endpoint-auth-post",
	"auth/token-endpoint-auth-none",
	"auth/pre-registration",
}

// clientExpectedFail names the client scenarios lathe's MCP client fails,
// with the reason: none.
var clientExpectedFail = map[string]string{}

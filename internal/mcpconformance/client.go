// Package mcpconformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, which .ci/run installs under
// .ci/conformance with the Node it needs) against lathe: the server side
// against `lathe serve --http` proxying go-sdk's conformance fixture, and
// the client side through lathe's MCP client, [RunClient].
//
// Its test skips, saying why, when Node 22 or the suite is not installed,
// except under CI (CI set in the environment), where that is a failure.
package mcpconformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
	"github.com/lathe-tools/lathe/tool"
)

// scenarioCalls says which tool each client scenario expects to be called,
// and with what: the suite's server for the scenario offers it and checks
// what the call did. A scenario not named here (initialize) needs only the
// session and its tool list, except for the auth scenarios, which call
// "test-tool" once lathe's OAuth handler has a token.
var scenarioCalls = map[string]struct {
	tool string
	args string
}{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
	"sse-retry":                           {"test_reconnection", `{}`},
}

// RunClient is the client program the suite starts for a scenario: it
// connects lathe's MCP client (an engine with the tools of one upstream
// server, url) and does what the scenario asks, through the engine's
// pipeline. An elicitation is accepted with no fields filled in, so that
// the defaults the server's schema gives are what the answer holds.
func RunClient(ctx context.Context, scenario, url string, log io.Writer) error {
	e := lathe.New(lathe.Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	defer e.Close()
	none := ""
	hooks := tool.Hooks{
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			fmt.Fprintf(log, "elicitation: %s\n", r.Message)
			return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{}}, nil
		},
		Log: func(m tool.LogMessage) { fmt.Fprintf(log, "server log (%s): %s\n", m.Level, m.Data) },
	}
	cfg := mcp.Config{Name: "conformance", URL: url, Prefix: &none}
	if strings.HasPrefix(scenario, "auth/") {
		h, err := authorizer(url)
		if err != nil {
			return err
		}
		cfg.OAuth = h
	}
	_, err := mcp.Open(ctx, e, []mcp.Config{cfg}, mcp.Options{
		Hooks:  hooks,
		Logger: slog.New(slog.NewTextHandler(log, nil)),
		Warn:   func(err error) { fmt.Fprintln(log, "warning:", err) },
	})
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", url, err)
	}
	var names []string
	for _, d := range e.Tools() {
		names = append(names, d.Name)
	}
	fmt.Fprintf(log, "tools: %s\n", strings.Join(names, ", "))
	c, ok := scenarioCalls[scenario]
	switch {
	case ok:
	case strings.HasPrefix(scenario, "auth/"):
		c.tool, c.args = "test-tool", `{}`
	default:
		return nil
	}
	out := e.Call(tool.WithHooks(ctx, hooks), &tool.Call{ID: "conformance", Name: c.tool, Arguments: json.RawMessage(c.args)})
	if out.Question != nil {
		return fmt.Errorf("calling %s: it asked %q, which nobody can answer here", c.tool, out.Question.Text)
	}
	if out.Result == nil {
		return errors.New("calling " + c.tool + ": no result")
	}
	b, _ := json.Marshal(out.Result)
	fmt.Fprintf(log, "%s: %s\n", c.tool, b)
	if out.Result.IsError && out.Result.ErrorKind != tool.KindToolError {
		return fmt.Errorf("calling %s failed: %s", c.tool, b)
	}
	return nil
}

// authorizer is lathe's OAuth handler for the auth scenarios, with the
// browser played by the program: it asks for the authorization URL, which
// the suite's authorization server answers at once with a redirect, and
// follows that redirect to lathe's loopback listener. A client registered
// beforehand comes in MCP_CONFORMANCE_CONTEXT.
func authorizer(serverURL string) (*oauth.Handler, error) {
	var conf struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if c := os.Getenv("MCP_CONFORMANCE_CONTEXT"); c != "" {
		if err := json.Unmarshal([]byte(c), &conf); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return oauth.NewHandler(oauth.Options{
		Server: "conformance", URL: serverURL,
		ClientID: conf.ClientID, ClientSecret: conf.ClientSecret,
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json",
		Open: func(ctx context.Context, authURL string) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
			if err != nil {
				return err
			}
			resp, err := browser.Do(req)
			if err != nil {
				return fmt.Errorf("authorization URL: %w", err)
			}
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if loc == "" {
				return fmt.Errorf("the authorization URL answered %s, with no redirect", resp.Status)
			}
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
			if err != nil {
				return err
			}
			resp, err = browser.Do(req)
			if err != nil {
				return fmt.Errorf("following the redirect to %s: %w", loc, err)
			}
			resp.Body.Close()
			return nil
		},
	})
}

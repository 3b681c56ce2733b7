package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
)

// interviewer is an upstream MCP server whose tool "interview" asks, in the
// course of each call, a question that holds a secret of the caller
// ("who"), samples a message about it, and reports progress about it. The
// first runs of two calls meet before either asks, so that two calls are
// in flight at once when the questions come. versions restricts the
// protocol versions it speaks.
func interviewer(t *testing.T, versions ...string) string {
	t.Helper()
	var mu sync.Mutex
	arrived := 0
	both := make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "interviewer", Version: "1"},
		&sdk.ServerOptions{SupportedProtocolVersions: versions})
	sdk.AddTool(srv, &sdk.Tool{Name: "interview", Description: "Ask the caller about its secret."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Who string `json:"who"`
		}) (*sdk.CallToolResult, any, error) {
			if len(req.Params.InputResponses) == 0 {
				if tok := req.Params.GetProgressToken(); tok != nil {
					req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1,
						Message: "working for " + in.Who})
				}
				req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: "log about " + in.Who})
				mu.Lock()
				if arrived++; arrived == 2 {
					close(both)
				}
				mu.Unlock()
				select {
				case <-both:
				case <-time.After(10 * time.Second):
					return nil, nil, errors.New("the two calls were not in flight together within 10s")
				}
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{
					"name": &sdk.ElicitParams{Message: "Who is asking about the secret of " + in.Who + "?",
						RequestedSchema: &jsonschema.Schema{Type: "object",
							Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}}}},
					"model": &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user",
						Content: &sdk.TextContent{Text: "summarize the secret of " + in.Who}}}},
				}}, nil, nil
			}
			name := "?"
			if r, ok := req.Params.InputResponses["name"].(*sdk.ElicitResult); ok {
				name = fmt.Sprint(r.Content["name"])
			}
			// The SDK fulfils a sampling input request for a client of a
			// version before 2026-07-28 itself, and answers it with the
			// result of sampling with tools.
			model := "?"
			switch r := req.Params.InputResponses["model"].(type) {
			case *sdk.CreateMessageResult:
				model = r.Model
			case *sdk.CreateMessageWithToolsResult:
				model = r.Model
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
				Text: fmt.Sprintf("secret of %s, answered by %s, sampled by %s", in.Who, name, model)}}}, nil, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts.URL
}

// seen is what one downstream client was shown.
type seen struct {
	mu       sync.Mutex
	texts    []string
	progress []string
}

func (s *seen) add(list *[]string, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	*list = append(*list, text)
}

func (s *seen) all() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(append(append([]string{}, s.texts...), s.progress...), "\n")
}

// interviewee connects a downstream client named name over HTTP: it
// answers every question with its own name and samples with its own model.
func interviewee(t *testing.T, url, name string) (*sdk.ClientSession, *seen) {
	t.Helper()
	s := &seen{}
	c := sdk.NewClient(&sdk.Implementation{Name: name}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			s.add(&s.texts, r.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			for _, m := range r.Params.Messages {
				if tc, ok := m.Content.(*sdk.TextContent); ok {
					s.add(&s.texts, tc.Text)
				}
			}
			return &sdk.CreateMessageResult{Role: "assistant", Model: "model-of-" + name, Content: &sdk.TextContent{Text: "ok"}}, nil
		},
		ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			s.add(&s.progress, r.Params.Message)
		},
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			s.add(&s.texts, fmt.Sprint(r.Params.Data))
		},
	})
	// A session of 2025-11-25: its questions come while the call runs, and
	// logging/setLevel is of the versions before 2026-07-28.
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerRT("t")}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bounded(t, "closing "+name+"'s client", func() { cs.Close() }) })
	if err := cs.SetLoggingLevel(context.Background(), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return cs, s
}

// TestEachClientGetsItsOwnQuestions: two clients of lathe serve call the
// same upstream server at once; the server asks, samples and reports
// progress about each call's secret. Each client is shown only what its
// own call caused, and its answers reach its own call: neither client's
// person sees the other's secret, and no client's answer decides the
// other's call. Under a protocol version that names the call a request is
// for, both calls are answered; under one that does not, over streamable
// HTTP, the server sends each call's requests on the stream of that call,
// which names it: both calls are answered too. (Over stdio nothing names
// the call: a request lathe cannot place is refused rather than guessed;
// see TestCallerAfterAnotherSessionsCall.)
func TestEachClientGetsItsOwnQuestions(t *testing.T) {
	for _, c := range []struct {
		name     string
		versions []string
		answered bool
	}{
		{"the request names its call", []string{"2026-07-28", "2025-11-25"}, true},
		{"the stream names the call", []string{"2025-11-25"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEngine(t)
			prefix := ""
			pool, err := mcp.Open(context.Background(), e, []mcp.Config{{Name: "up", URL: interviewer(t, c.versions...) + "/mcp",
				Prefix: &prefix}}, mcp.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pool.Close() })
			srv := server.New(e, server.Options{Upstream: pool})
			ts := httptest.NewServer(srv.Handler(server.HTTPOptions{Token: "t"}))
			t.Cleanup(ts.Close)
			t.Cleanup(func() { closeBounded(t, srv) })

			names := []string{"alice", "bob"}
			results := make([]string, 2)
			shown := make([]*seen, 2)
			var wg sync.WaitGroup
			for i, name := range names {
				cs, s := interviewee(t, ts.URL+server.Path, name)
				shown[i] = s
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "interview", Arguments: map[string]any{"who": name},
						Meta: sdk.Meta{"progressToken": "token-of-" + name}})
					if err != nil {
						results[i] = "error: " + err.Error()
						return
					}
					results[i] = text(r)
				})
			}
			within(t, 40*time.Second, "two concurrent calls of the interviewer", wg.Wait)

			if c.answered && strings.Contains(strings.Join(results, " "), "multi-round-trip: fulfilling") {
				// The upstream fulfilled its input requests itself, with
				// requests that name no call: the version it and lathe
				// agreed on is older than 2026-07-28.
				t.Skip("lathe's MCP client and a go-sdk upstream over HTTP agree on a version before 2026-07-28, " +
					"in which a server's request names no call: " + results[0])
			}
			for i, name := range names {
				other := names[1-i]
				if got := shown[i].all(); strings.Contains(got, other) {
					t.Errorf("%s was shown what %s's call caused:\n%s", name, other, got)
				}
				if strings.Contains(results[i], "by "+other) || strings.Contains(results[i], "model-of-"+other) {
					t.Errorf("%s's answer decided %s's call: %s", other, name, results[i])
				}
				if c.answered {
					want := fmt.Sprintf("secret of %s, answered by %s, sampled by model-of-%s", name, name, name)
					if results[i] != want {
						t.Errorf("%s's call: %q, want %q", name, results[i], want)
					}
					if got := shown[i].all(); !strings.Contains(got, "secret of "+name) || !strings.Contains(got, "working for "+name) ||
						!strings.Contains(got, "log about "+name) {
						t.Errorf("%s was not shown its own call's question, sample, progress and log message:\n%s", name, got)
					}
				}
			}
		})
	}
}

package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
)

// chattyLevels are the levels at which the handlers of chattyUpstream log
// one message each.
var chattyLevels = []sdk.LoggingLevel{"debug", "info", "notice", "warning", "error"}

// chattyUpstream is a go-sdk server over streamable HTTP, of MCP
// 2026-07-28 when stateless is set (else of 2025-11-25), whose resource
// "test://chatty", prompt "chatty" and completions each log one message
// at each of chattyLevels, naming what logged, before they answer. Its
// resource "test://asks" elicits while it is read and answers with what
// came of it. levels records the log level each request's _meta named.
func chattyUpstream(t *testing.T, stateless bool) (url string, levels func() []string) {
	t.Helper()
	var seen texts
	chatter := func(ctx context.Context, ss *sdk.ServerSession, meta sdk.Meta, what string) {
		l, _ := meta[sdk.MetaKeyLogLevel].(string)
		seen.add(l)
		for _, level := range chattyLevels {
			ss.Log(ctx, &sdk.LoggingMessageParams{Level: level, Data: what + " at " + string(level)})
		}
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "chatty", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Logging: &sdk.LoggingCapabilities{}},
		CompletionHandler: func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			chatter(ctx, req.Session, req.Params.GetMeta(), "complete")
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{"chatted"}}}, nil
		},
	})
	srv.AddResource(&sdk.Resource{URI: "test://chatty", Name: "chatty"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			chatter(ctx, req.Session, req.Params.GetMeta(), "read")
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "chatted"}}}, nil
		})
	srv.AddResource(&sdk.Resource{URI: "test://asks", Name: "asks"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "which one?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
			text := "answered"
			if err != nil {
				text = "refused: " + err.Error()
			} else if res.Action != "accept" {
				text = "action " + res.Action
			}
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: text}}}, nil
		})
	srv.AddPrompt(&sdk.Prompt{Name: "chatty", Arguments: []*sdk.PromptArgument{{Name: "x"}}},
		func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			chatter(ctx, req.Session, req.Params.GetMeta(), "get")
			return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "chatted"}}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: stateless}))
	t.Cleanup(ts.Close)
	return ts.URL, seen.all
}

// texts collects strings sent from several goroutines.
type texts struct {
	mu sync.Mutex
	s  []string
}

func (x *texts) add(s string) {
	x.mu.Lock()
	x.s = append(x.s, s)
	x.mu.Unlock()
}

// all returns the strings collected so far.
func (x *texts) all() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return slices.Clone(x.s)
}

// chattyFace serves lathe's MCP face over streamable HTTP, until the test
// ends, with a chattyUpstream (of MCP 2026-07-28 when stateless is set) as
// its one upstream, "up".
func chattyFace(t *testing.T, stateless bool) (ts *httptest.Server, levels func() []string) {
	t.Helper()
	url, levels := chattyUpstream(t, stateless)
	e, pool := open(t, mcp.Options{}, mcp.Config{Name: "up", URL: url})
	return serveFace(t, e, pool), levels
}

// logClient connects a go-sdk client of version to lathe's face at ts; got
// returns the log messages it has received so far.
func logClient(t *testing.T, ctx context.Context, ts *httptest.Server, version string, opts *sdk.ClientOptions) (cs *sdk.ClientSession, got func() []string) {
	t.Helper()
	var msgs texts
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	opts.LoggingMessageHandler = func(_ context.Context, r *sdk.LoggingMessageRequest) {
		msgs.add(fmt.Sprint(r.Params.Data))
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "reader"}, opts).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, msgs.all
}

// waitLogs waits up to two seconds for got to hold n messages, and a
// little longer when n is 0, so that a message that should not come has
// had time to.
func waitLogs(got func() []string, n int) []string {
	deadline := time.Now().Add(2 * time.Second)
	if n == 0 {
		deadline = time.Now().Add(300 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		if n > 0 && len(got()) >= n {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return got()
}

// followedRequests are a resource read, a prompt get and a completion,
// each sent by cs with meta; what names each in the upstream's messages.
var followedRequests = []struct {
	what string
	send func(ctx context.Context, cs *sdk.ClientSession, meta sdk.Meta) (string, error)
}{
	{"read", func(ctx context.Context, cs *sdk.ClientSession, meta sdk.Meta) (string, error) {
		r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://chatty", Meta: meta})
		if err != nil {
			return "", err
		}
		return r.Contents[0].Text, nil
	}},
	{"get", func(ctx context.Context, cs *sdk.ClientSession, meta sdk.Meta) (string, error) {
		r, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "up__chatty", Meta: meta})
		if err != nil {
			return "", err
		}
		return r.Messages[0].Content.(*sdk.TextContent).Text, nil
	}},
	{"complete", func(ctx context.Context, cs *sdk.ClientSession, meta sdk.Meta) (string, error) {
		r, err := cs.Complete(ctx, &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "up__chatty"},
			Argument: sdk.CompleteParamsArgument{Name: "x", Value: "c"}, Meta: meta})
		if err != nil {
			return "", err
		}
		return r.Completion.Values[0], nil
	}},
}

// TestRequestLevelReachesUpstream2026: a client of MCP 2026-07-28 names a
// log level in the _meta of a resource read, a prompt get and a
// completion; lathe asks an upstream of 2026-07-28 for the same level, so
// the client gets exactly the upstream's messages of that request at and
// above it, and none when it names none. Before, lathe asked for the
// pool's level (none here), and the client got nothing.
func TestRequestLevelReachesUpstream2026(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts, levels := chattyFace(t, true)

	for _, r := range followedRequests {
		for _, level := range []string{"", "warning", "debug"} {
			name := fmt.Sprintf("%s at level %q", r.what, level)
			cs, got := logClient(t, ctx, ts, "2026-07-28", nil)
			meta := sdk.Meta{}
			if level != "" {
				meta[sdk.MetaKeyLogLevel] = level
			}
			before := len(levels())
			text, err := r.send(ctx, cs, meta)
			if err != nil || text != "chatted" {
				t.Fatalf("%s: %q, %v", name, text, err)
			}
			var want []string
			if level != "" {
				for _, l := range chattyLevels[slices.Index(chattyLevels, sdk.LoggingLevel(level)):] {
					want = append(want, r.what+" at "+string(l))
				}
			}
			if g := waitLogs(got, len(want)); !slices.Equal(g, want) {
				t.Errorf("%s: the client got %q, want %q", name, g, want)
			}
			if l := levels(); len(l) != before+1 || l[before] != level {
				t.Errorf("%s: the upstream was asked for the levels %q, want %q", name, l[before:], level)
			}
			cs.Close()
		}
	}
}

// TestRequestLogsReachTheirClientAlone: two clients of lathe's face, both
// at log level debug, share an upstream; what the upstream logs while it
// serves one client's resource read, prompt get or completion reaches that
// client, and not the other. Before, such a message belonged to no call,
// and went to every client.
func TestRequestLogsReachTheirClientAlone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts, _ := chattyFace(t, false)
	a, gotA := logClient(t, ctx, ts, "2025-11-25", nil)
	b, gotB := logClient(t, ctx, ts, "2025-11-25", nil)
	for _, cs := range []*sdk.ClientSession{a, b} {
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
	}
	seenA := 0
	for _, r := range followedRequests {
		text, err := r.send(ctx, a, nil)
		if err != nil || text != "chatted" {
			t.Fatalf("%s: %q, %v", r.what, text, err)
		}
		var want []string
		for _, l := range chattyLevels {
			want = append(want, r.what+" at "+string(l))
		}
		if g := waitLogs(gotA, seenA+len(want)); !slices.Equal(g[seenA:], want) {
			t.Errorf("%s: the client that asked got %q, want %q", r.what, g[seenA:], want)
		}
		seenA = len(gotA())
		if g := waitLogs(gotB, 0); len(g) != 0 {
			t.Fatalf("%s: the other client got the messages of the first's request: %q", r.what, g)
		}
	}
}

// TestElicitationDuringReadRefused: an upstream that elicits while a
// client reads one of its resources is refused, whether or not the client
// could answer (a read cannot end with a question, and lathe does not ask
// a client on a read's behalf), and the read goes on to its answer.
func TestElicitationDuringReadRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ts, _ := chattyFace(t, false)
	var asked atomic.Bool
	cs, _ := logClient(t, ctx, ts, "2025-11-25", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked.Store(true)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "this"}}, nil
		}})
	r, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "test://asks"})
	if err != nil {
		t.Fatal(err)
	}
	if text := r.Contents[0].Text; asked.Load() || text == "answered" || !strings.HasPrefix(text, "refused: ") {
		t.Fatalf("the read's elicitation: %q (the client was asked: %v)", text, asked.Load())
	}
}

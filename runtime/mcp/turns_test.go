package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// serveAsker is a go-sdk server over stdio whose tool "interview" asks its
// client, from the tool's handler, about the caller's secret ("who"), a
// while after the call came, as servers written before MCP 2026-07-28 do:
// the request names no call.
func serveAsker() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "asker", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "interview", Description: "Ask the caller about its secret."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Who string `json:"who"`
		}) (*sdk.CallToolResult, any, error) {
			time.Sleep(300 * time.Millisecond)
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "Who asks about the secret of " + in.Who + "?",
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
			if err != nil {
				return nil, nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
				Text: fmt.Sprintf("secret of %s, answered by %v", in.Who, res.Content["name"])}}}, nil, nil
		})
	// "meet" waits until two of its calls are in flight at once, so that
	// a question comes while both are; then each call asks the caller
	// about its secret (ask), asks its model (sample), or neither, and
	// ends a while (hold, in milliseconds) later.
	var mu sync.Mutex
	met := make(chan struct{})
	arrived := 0
	sdk.AddTool(srv, &sdk.Tool{Name: "meet", Description: "Meet another call, then ask."},
		func(ctx context.Context, req *sdk.CallToolRequest, in struct {
			Who    string `json:"who"`
			Ask    bool   `json:"ask,omitempty"`
			Sample bool   `json:"sample,omitempty"`
			Hold   int    `json:"hold,omitempty"`
			// Stubborn asks on even once the call is cancelled, as a
			// server still at work on a call it was told to cancel.
			Stubborn bool `json:"stubborn,omitempty"`
		}) (*sdk.CallToolResult, any, error) {
			mu.Lock()
			wait := met
			if arrived++; arrived == 2 {
				close(met)
				met, arrived = make(chan struct{}), 0
			}
			mu.Unlock()
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
				return nil, nil, errors.New("no other call came within 10s")
			}
			out := in.Who + ": asked nothing"
			switch {
			case in.Ask:
				askCtx := ctx
				if in.Stubborn {
					askCtx = context.WithoutCancel(ctx)
				}
				res, err := req.Session.Elicit(askCtx, &sdk.ElicitParams{Message: "Who asks about the secret of " + in.Who + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)})
				if err != nil {
					return nil, nil, err
				}
				out = fmt.Sprintf("secret of %s, answered by %v", in.Who, res.Content["name"])
			case in.Sample:
				res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
					Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "summarize the secret of " + in.Who}}}})
				if err != nil {
					return nil, nil, err
				}
				out = fmt.Sprintf("secret of %s, sampled by %s", in.Who, res.Model)
			}
			time.Sleep(time.Duration(in.Hold) * time.Millisecond)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// TestClientsTakeTurns: two clients (sessions) call, at once, a server
// over stdio that asks questions naming no call. Nothing on the wire says
// which call a question is for; once the server has asked such a
// question, calls of different clients take turns on it, so that each
// question is asked while one client's calls alone are in flight: each
// client is asked about its own secret only, and its answer decides its
// own call.
func TestClientsTakeTurns(t *testing.T) {
	argv, env := self(t, "asker")
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var mu sync.Mutex
	asked := map[string][]string{}
	as := func(name string) context.Context {
		return tool.WithHooks(lathe.WithSession(ctx, name), tool.Hooks{
			Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
				mu.Lock()
				asked[name] = append(asked[name], r.Message)
				mu.Unlock()
				return &tool.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
			}})
	}
	// One client's call alone: its question is its own.
	if r := mustOK(t, call(t, as("carol"), e, "up__interview", `{"who":"carol"}`)); r.Text() != "secret of carol, answered by carol" {
		t.Fatalf("carol's call alone: %q", r.Text())
	}

	names := []string{"alice", "bob"}
	results := make([]string, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			r := call(t, as(name), e, "up__interview", `{"who":"`+name+`"}`)
			results[i] = r.Text()
		})
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("the two concurrent calls did not end within 30s")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, name := range names {
		other := names[1-i]
		if want := "secret of " + name + ", answered by " + name; results[i] != want {
			t.Errorf("%s's call: %q, want %q", name, results[i], want)
		}
		if got := strings.Join(asked[name], "\n"); strings.Contains(got, other) || !strings.Contains(got, name) {
			t.Errorf("%s was asked:\n%s", name, got)
		}
	}
}

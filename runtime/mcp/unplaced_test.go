package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// The first question of a server over stdio that names no call, asked
// while calls of two clients are in flight (they do not take turns yet):
// nothing on the wire says whose it is. It must reach the client whose
// call asked it, or be refused saying why, and never the other client: a
// wrong guess would show one person's question to another and decide one
// call with the other's answer.

// refusedText is what a question lathe could not place ends with.
const refusedText = "lathe cannot tell which of the calls under way this question"

// shown records what each client was asked, by client.
type shown struct {
	mu    sync.Mutex
	texts map[string][]string
}

func (s *shown) add(client, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.texts == nil {
		s.texts = map[string][]string{}
	}
	s.texts[client] = append(s.texts[client], text)
}

func (s *shown) of(client string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.texts[client], "\n")
}

// asClient is ctx as a call of the client (session) name, which answers
// questions with its name and samples with its own model.
func asClient(ctx context.Context, name string, seen *shown) context.Context {
	return tool.WithHooks(lathe.WithSession(ctx, name), tool.Hooks{
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			seen.add(name, r.Message)
			return &tool.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		Sample: func(_ context.Context, r *tool.SamplingRequest) (*tool.SamplingResult, error) {
			for _, m := range r.Messages {
				seen.add(name, m.Content.Text)
			}
			return &tool.SamplingResult{Role: "assistant", Model: "model-of-" + name,
				Content: tool.Content{Type: tool.ContentText, Text: "ok"}}, nil
		}})
}

// meetAt makes the n calls of call at once (each "meet" of the upstream
// waits for another), and returns each call's text, an error's too. The
// calls have 15s; the test fails if they have not all ended within 20s.
func meetAt(t *testing.T, call func(ctx context.Context, i int) string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	out := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = call(ctx, i) })
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the concurrent calls did not end within 20s: the questions deadlocked")
	}
	return out
}

// TestFirstQuestionWaitsForItsCall: alice's and bob's calls are in flight
// at once; alice's call asks (an elicitation, or a sampling request), and
// bob's, which asks nothing, ends a little later. The question waits until
// bob's call has been answered, and then reaches alice alone, whose answer
// decides her call.
func TestFirstQuestionWaitsForItsCall(t *testing.T) {
	for _, kind := range []string{"ask", "sample"} {
		t.Run(kind, func(t *testing.T) {
			argv, env := self(t, "asker")
			e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
			seen := &shown{}
			names := []string{"alice", "bob"}
			args := []string{`{"who":"alice","` + kind + `":true}`, `{"who":"bob","hold":300}`}
			results := meetAt(t, func(ctx context.Context, i int) string {
				return e.Call(asClient(ctx, names[i], seen), &tool.Call{Name: "up__meet", Arguments: []byte(args[i])}).Result.Text()
			}, 2)
			want := "secret of alice, answered by alice"
			if kind == "sample" {
				want = "secret of alice, sampled by model-of-alice"
			}
			if results[0] != want {
				t.Errorf("alice's call: %q, want %q", results[0], want)
			}
			if results[1] != "bob: asked nothing" {
				t.Errorf("bob's call: %q", results[1])
			}
			if got := seen.of("bob"); got != "" {
				t.Errorf("bob was shown alice's question:\n%s", got)
			}
			if got := seen.of("alice"); !strings.Contains(got, "secret of alice") {
				t.Errorf("alice was shown %q, not her question", got)
			}
		})
	}
}

// TestBothFirstQuestions: alice's and bob's calls are in flight at once and
// both ask (one an elicitation, the other an elicitation or a sampling
// request): each call waits for a question, so neither ends to tell whose
// the other question is. lathe does not wait for their deadlines: it
// refuses the first question, saying why, so that the call that asked it
// ends, and the second question is then known to be the other call's.
// Neither client is ever shown the other's question, and no answer decides
// the other's call.
func TestBothFirstQuestions(t *testing.T) {
	for _, second := range []string{"ask", "sample"} {
		t.Run(second, func(t *testing.T) {
			argv, env := self(t, "asker")
			e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
			seen := &shown{}
			names := []string{"alice", "bob"}
			args := []string{`{"who":"alice","ask":true}`, `{"who":"bob","` + second + `":true}`}
			start := time.Now()
			results := meetAt(t, func(ctx context.Context, i int) string {
				return e.Call(asClient(ctx, names[i], seen), &tool.Call{Name: "up__meet", Arguments: []byte(args[i])}).Result.Text()
			}, 2)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the two calls took %s: they waited for their deadlines", d)
			}
			answered := 0
			for i, name := range names {
				other := names[1-i]
				if got := seen.of(name); strings.Contains(got, other) {
					t.Errorf("%s was shown %s's question:\n%s", name, other, got)
				}
				switch r := results[i]; {
				case strings.Contains(r, "by "+name) || strings.Contains(r, "by model-of-"+name):
					answered++
				case strings.Contains(r, refusedText):
				default:
					t.Errorf("%s's call: %q, neither its own answer nor a refusal that says why", name, r)
				}
			}
			if answered == 0 {
				t.Errorf("neither question was placed: %q", results)
			}
		})
	}
}

// TestOneClientsQuestions: two calls of alice alone are in flight, and
// both ask: whichever call each question is for, it is alice's, and she
// is asked both at once.
func TestOneClientsQuestions(t *testing.T) {
	argv, env := self(t, "asker")
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
	seen := &shown{}
	results := meetAt(t, func(ctx context.Context, i int) string {
		return e.Call(asClient(ctx, "alice", seen), &tool.Call{Name: "up__meet",
			Arguments: fmt.Appendf(nil, `{"who":"alice-%d","ask":true}`, i)}).Result.Text()
	}, 2)
	for i, r := range results {
		if want := fmt.Sprintf("secret of alice-%d, answered by alice", i); r != want {
			t.Errorf("alice's call %d: %q, want %q", i, r, want)
		}
	}
	if got := seen.of("alice"); strings.Count(got, "Who asks") != 2 {
		t.Errorf("alice was asked:\n%s", got)
	}
}

// TestGatewayFirstQuestions: the same through lathe serve, over streamable
// HTTP, to two clients of their own: an upstream over stdio whose first
// question comes while both clients' calls are in flight.
func TestGatewayFirstQuestions(t *testing.T) {
	for _, c := range []struct {
		name string
		args [2]string
	}{
		{"one asks", [2]string{`{"who":"alice","ask":true}`, `{"who":"bob","hold":300}`}},
		{"both ask", [2]string{`{"who":"alice","ask":true}`, `{"who":"bob","ask":true}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			argv, env := self(t, "asker")
			e, pool := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
			ts := serveFace(t, e, pool)
			seen := &shown{}
			names := []string{"alice", "bob"}
			sessions := make([]*sdk.ClientSession, 2)
			for i, name := range names {
				cl := sdk.NewClient(&sdk.Implementation{Name: name}, &sdk.ClientOptions{
					ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						seen.add(name, r.Params.Message)
						return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
					}})
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path, MaxRetries: -1},
					&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				sessions[i] = cs
			}
			results := meetAt(t, func(ctx context.Context, i int) string {
				r, err := sessions[i].CallTool(ctx, &sdk.CallToolParams{Name: "up__meet", Arguments: json.RawMessage(c.args[i])})
				if err != nil {
					return "error: " + err.Error()
				}
				return callText(r)
			}, 2)
			answered := 0
			for i, name := range names {
				other := names[1-i]
				if got := seen.of(name); strings.Contains(got, other) {
					t.Errorf("%s was shown %s's question:\n%s", name, other, got)
				}
				switch r := results[i]; {
				case r == "secret of "+name+", answered by "+name || r == name+": asked nothing":
					answered++
				case strings.Contains(r, refusedText) && c.name == "both ask":
				default:
					t.Errorf("%s's call: %q", name, r)
				}
			}
			if answered == 0 {
				t.Errorf("neither question was placed: %q", results)
			}
		})
	}
}

// TestAbandonedCallsQuestion: bob's call asks while alice's is in flight,
// and bob gives up on his call before anyone answers; the server goes on
// asking. alice's call is then the only one in flight, but the question
// is bob's: it must not be put to alice. It waits, and when alice's call
// has ended too, it is refused, shown to no one.
func TestAbandonedCallsQuestion(t *testing.T) {
	argv, env := self(t, "asker")
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", Command: argv, Env: env})
	seen := &shown{}
	names := []string{"alice", "bob"}
	// bob gives up 1.5 s in, alice's call ends 3 s after they met: long
	// enough, on a loaded machine, for both calls to meet first.
	args := []string{`{"who":"alice","hold":3000}`, `{"who":"bob","ask":true,"stubborn":true}`}
	results := meetAt(t, func(ctx context.Context, i int) string {
		if names[i] == "bob" {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 1500*time.Millisecond)
			defer cancel()
		}
		return e.Call(asClient(ctx, names[i], seen), &tool.Call{Name: "up__meet", Arguments: []byte(args[i])}).Result.Text()
	}, 2)
	if results[0] != "alice: asked nothing" {
		t.Errorf("alice's call: %q", results[0])
	}
	if got := seen.of("alice"); got != "" {
		t.Errorf("alice was shown bob's question:\n%s", got)
	}
	if got := seen.of("bob"); got != "" {
		t.Errorf("bob was shown %q after he gave up on his call", got)
	}
}

// TestTaskNamesItsCall: alice's and bob's calls of an upstream over stdio
// become tasks of MCP 2025-11-25 at once, and each task asks its client
// something while lathe waits in tasks/result. Each question names its
// task (io.modelcontextprotocol/related-task), and so the call that became
// it: both are put to their own clients at once, where questions naming
// no call would have left lathe one to refuse.
func TestTaskNamesItsCall(t *testing.T) {
	cfg, logf, _ := tasksUpstream(t)
	e, _ := open(t, mcp.Options{}, cfg)
	seen := &shown{}
	names := []string{"alice", "bob"}
	results := meetAt(t, func(ctx context.Context, i int) string {
		ctx = tool.WithHooks(lathe.WithSession(ctx, names[i]), tool.Hooks{
			Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
				seen.add(names[i], r.Message)
				// alice goes on, bob does not: each answer decides its
				// own call.
				return &tool.ElicitResult{Action: "accept", Content: map[string]any{"answer": names[i] == "alice"}}, nil
			}})
		return e.Call(ctx, &tool.Call{Name: "up__confirm_for", Arguments: []byte(`{"word":"` + names[i] + `"}`)}).Result.Text()
	}, 2)
	for i, name := range names {
		if want := fmt.Sprintf("went on for %s: %v", name, name == "alice"); results[i] != want {
			t.Errorf("%s's call: %q, want %q", name, results[i], want)
		}
		// (A lathe server upstream puts a task's question to each route
		// to its client, here twice on one session: the first answer
		// counts.)
		if got := seen.of(name); strings.ReplaceAll(got, "Go on for "+name+"?", "") != strings.Repeat("\n", strings.Count(got, "\n")) || got == "" {
			t.Errorf("%s was shown %q", name, got)
		}
	}
	if b, _ := os.ReadFile(logf); !strings.Contains(string(b), `"method":"tasks/result"`) {
		t.Errorf("the calls were not tasks; the upstream read:\n%s", b)
	}
}

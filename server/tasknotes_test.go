package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// dripTool reports progress and logs a message at each of its steps: one
// at once, one when step is closed, one when finish is closed, and then
// ends.
func dripTool(step, finish <-chan struct{}) tool.Tool {
	return builtin.Must(builtin.Func(tool.Definition{Name: "drip", Summary: "Report, step by step."},
		func(ctx context.Context, _ struct{}) (string, error) {
			say := func(n float64, word string) {
				tool.ReportProgress(ctx, tool.Progress{Progress: n, Total: 3, Message: word})
				if h := tool.HooksFrom(ctx); h.Log != nil {
					h.Log(tool.LogMessage{Level: "info", Data: json.RawMessage(`"` + word + `"`)})
				}
			}
			say(1, "before")
			for i, ch := range []<-chan struct{}{step, finish} {
				select {
				case <-ch:
				case <-ctx.Done():
					return "", ctx.Err()
				}
				say(float64(i+2), []string{"meanwhile", "live"}[i])
			}
			return "dripped", nil
		}))
}

// heard is what a client was sent: progress messages and log data.
type heard struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (h *heard) has(progress, log string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.progress, progress) && slices.Contains(h.logs, log)
}

func (h *heard) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return "progress " + strings.Join(h.progress, ",") + "; logs " + strings.Join(h.logs, ",")
}

// A task's progress and log messages follow its client across a reconnect
// (MCP 2025-11-25, over streamable HTTP): Alice makes a task and goes away;
// what the task reports while no session of hers is there is kept with
// it, and reaches her new session when it presents the task's ID, on the
// stream of that request; while she waits in tasks/result, what comes
// next reaches her there. Bob, who presents her task's ID, is told of no
// task and sent nothing of it.
func TestTaskNotesFollowReconnect(t *testing.T) {
	step, finish := make(chan struct{}), make(chan struct{})
	srv := server.New(newEngine(t, dripTool(step, finish)), server.Options{})
	url := serveTasks(t, srv, users)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	alice := dialWith(t, url, "alice-token", map[string]any{})
	if _, err := alice.rpc("logging/setLevel", map[string]any{"level": "debug"}); err != nil {
		t.Fatal(err)
	}
	res, err := alice.rpc("tools/call", map[string]any{"name": "drip", "arguments": map[string]any{},
		"task": map[string]any{"ttl": 60000}, "_meta": map[string]any{"progressToken": "drip-1"}})
	if err != nil {
		t.Fatal(err)
	}
	var ct struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(res, &ct) != nil || ct.Task.TaskID == "" {
		t.Fatalf("no task: %s", res)
	}
	id := ct.Task.TaskID
	alice.close()
	// The task reports while no session of Alice's is there.
	close(step)

	connect := func(who, token string, h *heard) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: who}, &sdk.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
				h.mu.Lock()
				h.progress = append(h.progress, r.Params.Message)
				h.mu.Unlock()
			},
			LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
				h.mu.Lock()
				h.logs = append(h.logs, r.Params.Data.(string))
				h.mu.Unlock()
			},
		})
		addTaskMethods(t, c)
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: withToken(token)}}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s connecting: %v", who, err)
		}
		if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	// waitFor waits until h has heard the progress and log message.
	waitFor := func(what string, h *heard, progress, log string) {
		t.Helper()
		for !h.has(progress, log) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s: never heard %q and %q; heard %s", what, progress, log, h)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	var bobHeard heard
	bob := connect("bob", "bob-token", &bobHeard)
	defer bob.Close()

	var aliceHeard heard
	alice2 := connect("alice", "alice-token", &aliceHeard)
	defer alice2.Close()
	// tasks/get until what was sent meanwhile has come: the step may not
	// have been reported yet when she first asks.
	for !aliceHeard.has("meanwhile", "meanwhile") {
		if _, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, alice2, "tasks/get", &taskIDIn{TaskID: id}); err != nil {
			t.Fatalf("alice's tasks/get: %v", err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("alice's new session never heard what the task said meanwhile; heard %s", &aliceHeard)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !aliceHeard.has("before", "before") {
		t.Errorf("alice's new session did not hear the first step, which no session of hers got: %s", &aliceHeard)
	}

	// What comes while she waits in tasks/result reaches her there.
	got := make(chan error, 1)
	go func() {
		r, err := sdk.CallCustomMethod[*taskIDIn, *sdk.CallToolResult](ctx, alice2, "tasks/result", &taskIDIn{TaskID: id})
		if err == nil && (len(r.Content) == 0 || r.Content[0].(*sdk.TextContent).Text != "dripped") {
			err = &unexpected{r}
		}
		got <- err
	}()
	// The tasks/result may not have been received when finish closes:
	// what the task says then is kept, and sent when it comes.
	close(finish)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("alice's tasks/result: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("alice's tasks/result did not return")
	}
	waitFor("alice in tasks/result", &aliceHeard, "live", "live")

	// Bob presents her task's ID: no such task, and nothing of it.
	for _, m := range []string{"tasks/get", "tasks/result"} {
		if _, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, bob, m, &taskIDIn{TaskID: id}); err == nil ||
			!strings.Contains(err.Error(), "unknown task") {
			t.Errorf("bob's %s of alice's task: %v, want unknown task", m, err)
		}
	}
	// Alice's messages came on the streams of her requests, before their
	// answers; Bob's requests have been answered, so whatever would have
	// come to him has.
	if s := bobHeard.String(); s != "progress ; logs " {
		t.Errorf("bob heard alice's task: %s", s)
	}
	// Each message once.
	aliceHeard.mu.Lock()
	defer aliceHeard.mu.Unlock()
	for _, w := range []string{"before", "meanwhile", "live"} {
		if n := count(aliceHeard.progress, w); n != 1 {
			t.Errorf("alice heard progress %q %d times: %v", w, n, aliceHeard.progress)
		}
		if n := count(aliceHeard.logs, w); n != 1 {
			t.Errorf("alice heard log %q %d times: %v", w, n, aliceHeard.logs)
		}
	}
}

type unexpected struct{ r *sdk.CallToolResult }

func (u *unexpected) Error() string {
	b, _ := json.Marshal(u.r)
	return "unexpected result " + string(b)
}

func count(s []string, w string) int {
	n := 0
	for _, v := range s {
		if v == w {
			n++
		}
	}
	return n
}

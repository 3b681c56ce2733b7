package server_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/server"
)

// TestTaskQuestionOncePerSession: the session that made a task of MCP
// 2025-11-25 waits in tasks/result for it while the task's question is
// open. The session is asked once, whichever of its two ways the question
// takes (the session that made the task, the stream of its tasks/result):
// a person is not asked the same question twice. A client that holds no
// standalone stream, which a question of the session cannot reach, is
// asked on its tasks/result's stream, and its answer decides the task.
func TestTaskQuestionOncePerSession(t *testing.T) {
	for _, standalone := range []bool{true, false} {
		t.Run(fmt.Sprintf("standalone stream %v", standalone), func(t *testing.T) {
			srv := server.New(newEngine(t, testTools()...), server.Options{})
			url := serveTasks(t, srv, nil)
			var mu sync.Mutex
			asked := 0
			arrived := make(chan struct{}, 8)
			answer := make(chan struct{})
			c := sdk.NewClient(&sdk.Implementation{Name: "once"}, &sdk.ClientOptions{
				ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
					mu.Lock()
					asked++
					mu.Unlock()
					arrived <- struct{}{}
					select {
					case <-answer:
					case <-ctx.Done():
						return nil, ctx.Err()
					}
					return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
				},
			})
			addTaskMethods(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: !standalone},
				&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			id := confirmTask(t, ctx, cs)
			// The question is open: the task says so.
			for {
				g, err := sdk.CallCustomMethod[*taskIDIn, *taskOut](ctx, cs, "tasks/get", &taskIDIn{TaskID: id})
				if err != nil {
					t.Fatal(err)
				}
				if g.Status == "input_required" {
					break
				}
				if g.Status != "working" {
					t.Fatalf("the task is %s before its question was answered", g.Status)
				}
				select {
				case <-ctx.Done():
					t.Fatal("the task did not ask its question within 20s")
				case <-time.After(10 * time.Millisecond):
				}
			}
			type out struct {
				res *sdk.CallToolResult
				err error
			}
			result := make(chan out, 1)
			go func() {
				res, err := sdk.CallCustomMethod[*taskIDIn, *sdk.CallToolResult](ctx, cs, "tasks/result", &taskIDIn{TaskID: id})
				result <- out{res, err}
			}()
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatal("the task's question did not reach its client within 20s")
			}
			// A second request of the same question comes at once if it
			// comes at all: its way (tasks/result) is open by now.
			select {
			case <-arrived:
			case <-time.After(time.Second):
			}
			close(answer)
			var r out
			select {
			case r = <-result:
			case <-ctx.Done():
				t.Fatal("tasks/result did not return within 20s")
			}
			if r.err != nil || r.res.IsError || text(r.res) != "went on" {
				t.Errorf("tasks/result: %+v %v", r.res, r.err)
			}
			mu.Lock()
			defer mu.Unlock()
			if asked != 1 {
				t.Errorf("the client was asked the task's question %d times, want once", asked)
			}
		})
	}
}

package server_test

import (
	"context"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

type exampleTaskID struct {
	sdk.ParamsBase
	TaskID string `json:"taskId"`
}

type exampleList struct{ sdk.ParamsBase }

type exampleTasks struct {
	sdk.ResultBase
	Tasks []struct {
		TaskID string `json:"taskId"`
	} `json:"tasks"`
}

// A call run as an MCP task, with bounds of the server's own. Over stdio
// and HTTP a client asks for a task with the "task" field of tools/call; on
// a transport of one's own, such as this in-memory one, it puts the same
// value in _meta["lathe/task"].
func ExampleTaskOptions() {
	e := lathe.New(lathe.Options{})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "build", Summary: "Build, slowly."},
		func(context.Context, struct{}) (string, error) {
			time.Sleep(10 * time.Millisecond)
			return "built", nil
		})))
	srv := server.New(e, server.Options{Tasks: server.TaskOptions{MaxTTL: 10 * time.Minute, MaxPerClient: 8}})
	defer srv.Close()

	c := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil)
	sdk.AddSendingCustomMethod[*exampleList, *exampleTasks](c, "tasks/list")
	sdk.AddSendingCustomMethod[*exampleTaskID, *sdk.CallToolResult](c, "tasks/result")
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	ss, _ := srv.MCP().Connect(ctx, st, nil)
	cs, _ := c.Connect(ctx, ct, nil)
	defer func() {
		cs.Close()
		ss.Wait()
	}()

	// The answer is the task's handle, at once.
	cs.CallTool(ctx, &sdk.CallToolParams{Name: "build", Arguments: map[string]any{},
		Meta: sdk.Meta{"lathe/task": map[string]any{"ttl": 60_000}}})
	l, err := sdk.CallCustomMethod[*exampleList, *exampleTasks](ctx, cs, "tasks/list", &exampleList{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(l.Tasks), "task")
	res, err := sdk.CallCustomMethod[*exampleTaskID, *sdk.CallToolResult](ctx, cs, "tasks/result",
		&exampleTaskID{TaskID: l.Tasks[0].TaskID})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)
	// Output:
	// 1 task
	// built
}

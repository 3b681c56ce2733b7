package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/lathe-tools/lathe/host"
	"github.com/lathe-tools/lathe/tool"
)

func TestEnv(t *testing.T) {
	t.Setenv("HOST_TEST_GRANTED", "visible")
	t.Setenv("HOST_TEST_SECRET", "token-1234")
	f := newFixture(t)
	s := f.host(t, host.Permissions{Env: []string{"HOST_TEST_GRANTED", "HOST_TEST_UNSET"}}).Begin(testCtx(t))
	defer s.End()
	var r host.EnvResult
	wantOK(t, "env granted", call(t, s, host.MethodEnv, host.EnvParams{Name: "HOST_TEST_GRANTED"}, &r))
	if r.Value != "visible" || !r.Set {
		t.Fatalf("env = %+v", r)
	}
	wantOK(t, "env granted, unset", call(t, s, host.MethodEnv, host.EnvParams{Name: "HOST_TEST_UNSET"}, &r))
	if r.Set || r.Value != "" {
		t.Fatalf("env of an unset variable = %+v", r)
	}
	e := call(t, s, host.MethodEnv, host.EnvParams{Name: "HOST_TEST_SECRET"}, &r)
	wantCode(t, "env not granted", e, host.CodeDenied, `"HOST_TEST_SECRET" to env`)
	if strings.Contains(e.Message, "token-1234") {
		t.Fatalf("the denial shows the value: %s", e.Message)
	}
	wantCode(t, "env of a pattern", call(t, s, host.MethodEnv, host.EnvParams{Name: "HOST_TEST_*"}, nil), -32602)
}

func TestLogProgressAsk(t *testing.T) {
	var mu sync.Mutex
	var logs []tool.LogMessage
	var progress []tool.Progress
	ctx := tool.WithHooks(testCtx(t), tool.Hooks{
		Log:      func(m tool.LogMessage) { mu.Lock(); logs = append(logs, m); mu.Unlock() },
		Progress: func(p tool.Progress) { mu.Lock(); progress = append(progress, p); mu.Unlock() },
		Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
			return &tool.ElicitResult{Action: tool.ElicitAccept, Content: map[string]any{"answer": r.Message + "!"}}, nil
		},
	})
	f := newFixture(t)
	s := f.host(t, host.Permissions{}).Begin(ctx)
	defer s.End()
	wantOK(t, "log", call(t, s, host.MethodLog, host.LogParams{Level: "warning", Message: "careful"}, nil))
	wantCode(t, "log at a bad level", call(t, s, host.MethodLog, host.LogParams{Level: "shout", Message: "x"}, nil), -32602)
	wantOK(t, "progress", call(t, s, host.MethodProgress, host.ProgressParams{Progress: 1, Total: 2, Message: "half"}, nil))
	var a host.AskResult
	wantOK(t, "ask", call(t, s, host.MethodAsk, host.AskParams{Message: "sure"}, &a))
	if a.Action != "accept" || a.Content["answer"] != "sure!" {
		t.Fatalf("ask = %+v", a)
	}
	mu.Lock()
	defer mu.Unlock()
	var msg string
	if len(logs) == 1 {
		json.Unmarshal(logs[0].Data, &msg)
	}
	if len(logs) != 1 || logs[0].Level != "warning" || logs[0].Logger != "probe" || msg != "careful" {
		t.Fatalf("logs = %+v", logs)
	}
	if len(progress) != 1 || progress[0] != (tool.Progress{Progress: 1, Total: 2, Message: "half"}) {
		t.Fatalf("progress = %+v", progress)
	}
}

func TestAskWithoutAPerson(t *testing.T) {
	f := newFixture(t)
	s := f.host(t, host.Permissions{}).Begin(testCtx(t))
	defer s.End()
	wantCode(t, "ask with no elicitation", call(t, s, host.MethodAsk, host.AskParams{Message: "go?"}, nil), host.CodeFailed, "no person")
	wantCode(t, "unknown method", call(t, s, "fs/chmod", struct{}{}, nil), -32601)
	res, err := s.Do(testCtx(t), host.MethodRead, json.RawMessage(`{"path":`))
	if err == nil || err.(*host.Error).Code != -32602 {
		t.Fatalf("Do with bad JSON = %s, %v; want invalid params", res, err)
	}
}

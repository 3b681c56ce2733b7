package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/tool"
)

// serveTasks makes the test binary a lathe server over stdio, which offers
// every tool as a task. It appends each line it reads to $TASKS_LOG, and
// its tool "block", when cancelled, writes $TASKS_MARK.
func serveTasks() {
	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	type in struct {
		Word string `json:"word"`
	}
	err := e.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "slow", Summary: "Answer after a while."},
			func(ctx context.Context, a in) (string, error) {
				time.Sleep(50 * time.Millisecond)
				return "through: " + a.Word, nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "long", Summary: "Answer after a longer while."},
			func(ctx context.Context, a in) (string, error) {
				time.Sleep(400 * time.Millisecond)
				return "at last: " + a.Word, nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "confirm", Summary: "Ask first."},
			func(ctx context.Context, _ struct{}) (string, error) {
				a, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Go on?", Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				if !builtin.AnswerBool(a) {
					return "", errors.New("stopped")
				}
				return "went on", nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "confirm_for", Summary: "Ask first, about someone."},
			func(ctx context.Context, a in) (string, error) {
				v, err := builtin.Ask(ctx, tool.Question{ID: "sure", Text: "Go on for " + a.Word + "?", Kind: tool.QuestionBoolean})
				if err != nil {
					return "", err
				}
				return fmt.Sprintf("went on for %s: %v", a.Word, builtin.AnswerBool(v)), nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "block", Summary: "Wait to be cancelled."},
			func(ctx context.Context, _ struct{}) (string, error) {
				<-ctx.Done()
				os.WriteFile(os.Getenv("TASKS_MARK"), []byte("cancelled"), 0o600)
				return "", ctx.Err()
			})))
	if err != nil {
		panic(err)
	}
	log, err := os.OpenFile(os.Getenv("TASKS_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		panic(err)
	}
	var (
		stdin  io.Reader = os.Stdin
		stdout io.Writer = os.Stdout
	)
	if v := os.Getenv("TASKS_VERSION"); v != "" {
		stdin, stdout = onlyVersion(stdin, stdout, v)
	}
	srv := server.New(e, server.Options{Tasks: server.TaskOptions{Promote: 100 * time.Millisecond}})
	srv.ServeStdio(context.Background(), io.TeeReader(stdin, log), stdout)
	srv.Close()
	e.Close()
}

// onlyVersion makes a server of r and w one that speaks only version v:
// the protocol version of the initialize request it reads, and of the
// answer it writes, become v, whatever lathe asked for.
func onlyVersion(r io.Reader, w io.Writer, v string) (io.Reader, io.Writer) {
	re := regexp.MustCompile(`"protocolVersion":"[^"]*"`)
	to := []byte(`"protocolVersion":"` + v + `"`)
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if bytes.Contains(line, []byte(`"method":"initialize"`)) {
				line = re.ReplaceAll(line, to)
			}
			if _, err := pw.Write(append(line, '\n')); err != nil {
				return
			}
		}
		pw.CloseWithError(sc.Err())
	}()
	return pr, &initAnswer{w: w, re: re, to: to}
}

// initAnswer rewrites the version of the first answer written through it,
// which is initialize's.
type initAnswer struct {
	w    io.Writer
	re   *regexp.Regexp
	to   []byte
	done bool
}

func (a *initAnswer) Write(p []byte) (int, error) {
	if !a.done && bytes.Contains(p, []byte(`"protocolVersion"`)) {
		a.done = true
		if _, err := a.w.Write(a.re.ReplaceAll(p, a.to)); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return a.w.Write(p)
}

func tasksUpstream(t *testing.T) (mcp.Config, string, string) {
	argv, env := self(t, "tasks")
	dir := t.TempDir()
	logf, mark := filepath.Join(dir, "log"), filepath.Join(dir, "mark")
	env["TASKS_LOG"], env["TASKS_MARK"] = logf, mark
	return mcp.Config{Name: "up", Command: argv, Env: env}, logf, mark
}

func TestUpstreamTask(t *testing.T) {
	cfg, logf, _ := tasksUpstream(t)
	e, _ := open(t, mcp.Options{}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := mustOK(t, call(t, ctx, e, "up__slow", `{"word":"hi"}`))
	if r.Text() != "through: hi" {
		t.Errorf("result %q", r.Text())
	}
	b, _ := os.ReadFile(logf)
	if !strings.Contains(string(b), `"task":{"ttl":`) || !strings.Contains(string(b), `"method":"tasks/result"`) {
		t.Errorf("the upstream was not called as a task; it read:\n%s", b)
	}
}

func TestUpstreamTaskCancel(t *testing.T) {
	cfg, logf, mark := tasksUpstream(t)
	e, _ := open(t, mcp.Options{}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	r := call(t, ctx, e, "up__block", `{}`)
	if r.ErrorKind != tool.KindTimeout && r.ErrorKind != tool.KindCancelled {
		t.Errorf("kind %s: %s", r.ErrorKind, r.Text())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			b, _ := os.ReadFile(logf)
			t.Fatalf("the upstream task's call was not cancelled (%v); the upstream read:\n%s", err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b, _ := os.ReadFile(logf); !strings.Contains(string(b), `"method":"tasks/cancel"`) {
		t.Errorf("no tasks/cancel upstream; it read:\n%s", b)
	}
}

// Over HTTP, too: the upstream is a lathe server in this process, which
// refuses requests of MCP 2026-07-28 as a server with sessions of go-sdk
// does, so that lathe falls back to 2025-11-25 and its tasks.
func TestUpstreamTaskHTTP(t *testing.T) {
	ue := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	cancelled := make(chan struct{}, 1)
	err := ue.Register(
		builtin.Must(builtin.Func(tool.Definition{Name: "slow", Summary: "Answer after a while."},
			func(ctx context.Context, a struct {
				Word string `json:"word"`
			}) (string, error) {
				time.Sleep(50 * time.Millisecond)
				return "through: " + a.Word, nil
			})),
		builtin.Must(builtin.Func(tool.Definition{Name: "block", Summary: "Wait to be cancelled."},
			func(ctx context.Context, _ struct{}) (string, error) {
				<-ctx.Done()
				cancelled <- struct{}{}
				return "", ctx.Err()
			})))
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(ue, server.Options{})
	h := srv.Handler(server.HTTPOptions{})
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct {
			Method string                     `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method != "" {
			if _, ok := m.Params["task"]; ok {
				m.Method += "+task"
			}
			mu.Lock()
			seen = append(seen, m.Method)
			mu.Unlock()
		}
		if r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28" {
			http.Error(w, "Bad Request: this server has sessions, and speaks 2025-11-25 at most", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
		ue.Close()
	})
	saw := func(method string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(seen, method)
	}
	e, _ := open(t, mcp.Options{}, mcp.Config{Name: "up", URL: ts.URL + server.Path})

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	r := mustOK(t, call(t, ctx, e, "up__slow", `{"word":"hi"}`))
	if r.Text() != "through: hi" || !saw("server/discover") || !saw("initialize") || !saw("tools/call+task") ||
		!saw("tasks/result") || saw("tools/call") {
		t.Errorf("result %q; the upstream saw %v", r.Text(), seen)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	r = call(t, ctx, e, "up__block", `{}`)
	if r.ErrorKind != tool.KindTimeout && r.ErrorKind != tool.KindCancelled {
		t.Errorf("kind %s: %s", r.ErrorKind, r.Text())
	}
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatalf("the upstream task's call was not cancelled; the upstream saw %v", seen)
	}
	if !saw("tasks/cancel") {
		t.Errorf("no tasks/cancel upstream: %v", seen)
	}
}

// An upstream of MCP 2026-07-28 that offers the tasks extension gets it
// declared on lathe's requests, and answers a call that runs long, or
// that asks its client something, with a task: lathe polls tasks/get,
// answers the task's input requests with tasks/update, takes the result
// from tasks/get, and cancels the task with tasks/cancel when its own
// call ends first.
func TestUpstreamTask2026(t *testing.T) {
	cfg, logf, mark := tasksUpstream(t)
	cfg.Env["TASKS_VERSION"] = "2026-07-28"
	e, _ := open(t, mcp.Options{}, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	read := func() string {
		b, _ := os.ReadFile(logf)
		return string(b)
	}
	method := func(log, m string) bool { return strings.Contains(log, `"method":"`+m+`"`) }

	// A call that ends before it becomes a task: its plain result.
	if r := mustOK(t, call(t, ctx, e, "up__slow", `{"word":"hi"}`)); r.Text() != "through: hi" {
		t.Errorf("slow: %q", r.Text())
	}
	log := read()
	if !strings.Contains(log, `"protocolVersion":"2026-07-28"`) {
		t.Fatalf("the upstream did not speak 2026-07-28; it read:\n%s", log)
	}
	if strings.Contains(log, `"task":{`) || method(log, "tasks/get") {
		t.Errorf("a call of 2026-07-28 was made a task of 2025-11-25, or polled without a task:\n%s", log)
	}
	for _, line := range strings.Split(log, "\n") {
		if method(line, "tools/call") && !strings.Contains(line, `"io.modelcontextprotocol/tasks"`) {
			t.Errorf("a tools/call did not declare the tasks extension: %s", line)
		}
	}

	// A call that runs past the upstream's promotion: a task, polled.
	if r := mustOK(t, call(t, ctx, e, "up__long", `{"word":"hi"}`)); r.Text() != "at last: hi" {
		t.Errorf("long: %q", r.Text())
	}
	if log := read(); !method(log, "tasks/get") {
		t.Errorf("the long call was not polled as a task; the upstream read:\n%s", log)
	}

	// A task's question reaches the caller, and its answer goes back.
	var asked []string
	hooks := tool.Hooks{Elicit: func(_ context.Context, r *tool.ElicitRequest) (*tool.ElicitResult, error) {
		asked = append(asked, r.Message)
		return &tool.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
	}}
	if r := mustOK(t, call(t, tool.WithHooks(ctx, hooks), e, "up__confirm", `{}`)); r.Text() != "went on" {
		t.Errorf("confirm: %q", r.Text())
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Go on?") {
		t.Errorf("the caller was asked %q", asked)
	}
	if log := read(); !method(log, "tasks/update") {
		t.Errorf("the answer did not go back with tasks/update; the upstream read:\n%s", log)
	}

	// lathe's call ends first: the task is cancelled upstream.
	bctx, bcancel := context.WithTimeout(ctx, 700*time.Millisecond)
	defer bcancel()
	r := call(t, bctx, e, "up__block", `{}`)
	if r.ErrorKind != tool.KindTimeout && r.ErrorKind != tool.KindCancelled {
		t.Errorf("block: kind %s: %s", r.ErrorKind, r.Text())
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatalf("the upstream task's call was not cancelled (%v); the upstream read:\n%s", err, read())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if log := read(); !method(log, "tasks/cancel") {
		t.Errorf("no tasks/cancel upstream; it read:\n%s", log)
	}
}

// Through the gateway: a client of lathe serve calls a tool whose upstream
// (MCP 2026-07-28) makes a task of the call and asks a question; the
// question reaches the client that made the call, over lathe's own
// streamable HTTP, and its answer reaches the upstream's task.
func TestGatewayUpstreamTask2026(t *testing.T) {
	cfg, logf, _ := tasksUpstream(t)
	cfg.Env["TASKS_VERSION"] = "2026-07-28"
	e, _ := open(t, mcp.Options{}, cfg)
	srv := server.New(e, server.Options{})
	ts := httptest.NewServer(srv.Handler(server.HTTPOptions{}))
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var asked []string
	c := sdk.NewClient(&sdk.Implementation{Name: "client"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked = append(asked, r.Params.Message)
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": true}}, nil
		}})
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL + server.Path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "up__confirm", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || len(r.Content) != 1 || r.Content[0].(*sdk.TextContent).Text != "went on" {
		b, _ := json.Marshal(r)
		t.Errorf("the call through the gateway: %s", b)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "Go on?") {
		t.Errorf("the client was asked %q", asked)
	}
	if b, _ := os.ReadFile(logf); !strings.Contains(string(b), `"method":"tasks/update"`) {
		t.Errorf("the answer did not reach the upstream's task; it read:\n%s", b)
	}
}

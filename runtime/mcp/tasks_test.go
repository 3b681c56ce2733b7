package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	srv := server.New(e, server.Options{})
	srv.ServeStdio(context.Background(), io.TeeReader(os.Stdin, log), os.Stdout)
	srv.Close()
	e.Close()
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

// Over HTTP, too: the upstream is a lathe server in this process.
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
	if r.Text() != "through: hi" || !saw("tools/call+task") || !saw("tasks/result") || saw("tools/call") {
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

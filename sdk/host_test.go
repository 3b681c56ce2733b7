package sdk_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/runtime/process/protocol"
	"github.com/lathe-tools/lathe/sdk"
)

type pathIn struct {
	Path string `json:"path"`
}

// readTool reads a file through the host and returns its text.
var readTool = sdk.Func(sdk.Definition{Name: "show", Summary: "Show a file.",
	Permissions: &protocol.Permissions{Read: []string{"**"}}},
	func(ctx context.Context, in pathIn) (string, error) {
		h, ok := sdk.Host(ctx)
		if !ok {
			return "", errors.New("this tool runs as a VFS or WASM tool")
		}
		b, err := h.ReadFile(ctx, in.Path)
		return string(b), err
	})

// A VFS tool reaches the workspace through sdk.Host. Here Handle plays the
// tool's side against a canned host: the request, then the host's one
// response on the same input; the output is the host request and the
// answer.
func ExampleHost() {
	in := `{"protocol":1,"action":"run","tool":"show","arguments":{"path":"hello.txt"},"context":{"root":"/ws","host":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"result":{"data":"aGVsbG8sIHdvcmxk","eof":true}}` + "\n"
	sdk.Handle(context.Background(), strings.NewReader(in), os.Stdout, readTool)
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"fs/read","params":{"path":"hello.txt"}}
	// {"type":"success","content":"hello, world"}
}

// fakeHost answers the host requests written to its reader, out of order:
// it holds each request until it has two, then answers the second first.
func fakeHost(t *testing.T, requests io.Reader, responses io.Writer, answer func(method string, params json.RawMessage) string) {
	sc := bufio.NewScanner(requests)
	var held []map[string]json.RawMessage
	for sc.Scan() {
		var m map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["jsonrpc"] == nil {
			continue // the answer
		}
		held = append(held, m)
		if len(held) < 2 {
			continue
		}
		for i := len(held) - 1; i >= 0; i-- {
			var method string
			json.Unmarshal(held[i]["method"], &method)
			fmt.Fprintf(responses, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", held[i]["id"], answer(method, held[i]["params"]))
		}
		held = nil
	}
}

// TestHostConcurrent: requests made at once are told apart by id, whatever
// order the host answers them in.
func TestHostConcurrent(t *testing.T) {
	tl := sdk.Func(sdk.Definition{Name: "two"}, func(ctx context.Context, _ struct{}) (string, error) {
		h, _ := sdk.Host(ctx)
		var wg sync.WaitGroup
		got := make([]string, 2)
		errs := make([]error, 2)
		for i, name := range []string{"A", "B"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var v string
				var set bool
				v, set, errs[i] = h.Getenv(ctx, name)
				if !set {
					v = "unset"
				}
				got[i] = v
			}()
		}
		wg.Wait()
		return strings.Join(got, ","), errors.Join(errs...)
	})
	toolIn, hostOut := io.Pipe()
	hostIn, toolOut := io.Pipe()
	go fakeHost(t, hostIn, hostOut, func(method string, params json.RawMessage) string {
		var p struct{ Name string }
		json.Unmarshal(params, &p)
		return fmt.Sprintf(`{"value":"value of %s","set":true}`, p.Name)
	})
	req := `{"protocol":1,"action":"run","tool":"two","arguments":{},"context":{"host":1}}` + "\n"
	in := io.MultiReader(strings.NewReader(req), toolIn)
	var answer strings.Builder
	out := io.MultiWriter(toolOut, &answer)
	done := make(chan error, 1)
	go func() { done <- sdk.Handle(context.Background(), in, out, tl) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's two host requests were not answered in 10s")
	}
	hostOut.Close()
	toolOut.Close()
	if !strings.Contains(answer.String(), `"content":"value of A,value of B"`) {
		t.Errorf("output:\n%s", answer.String())
	}
}

// TestHostErrors: a host error reaches the tool as a *HostError, and a host
// that goes away fails the requests waiting on it, rather than hang them.
func TestHostErrors(t *testing.T) {
	in := `{"protocol":1,"action":"run","tool":"show","arguments":{"path":"x"},"context":{"host":1}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"add \"x\" to read in [tools.show]"}}` + "\n"
	var out strings.Builder
	if err := sdk.Handle(context.Background(), strings.NewReader(in), &out, readTool); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `add \"x\" to read`) || !strings.Contains(out.String(), `"type":"error"`) {
		t.Errorf("output:\n%s", out.String())
	}
	in = `{"protocol":1,"action":"run","tool":"show","arguments":{"path":"x"},"context":{"host":1}}` + "\n"
	out.Reset()
	done := make(chan error, 1)
	go func() { done <- sdk.Handle(context.Background(), strings.NewReader(in), &out, readTool) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a request to a host that is gone hung")
	}
	if !strings.Contains(out.String(), "connection to lathe is closed") {
		t.Errorf("output:\n%s", out.String())
	}
	// Without context.host there is no host.
	in = `{"protocol":1,"action":"run","tool":"show","arguments":{"path":"x"},"context":{}}`
	out.Reset()
	sdk.Handle(context.Background(), strings.NewReader(in), &out, readTool)
	if !strings.Contains(out.String(), "runs as a VFS or WASM tool") {
		t.Errorf("output:\n%s", out.String())
	}
}

// TestDeclaredPermissions: what a tool declares it needs goes out in its
// schema.
func TestDeclaredPermissions(t *testing.T) {
	var out strings.Builder
	if err := sdk.Handle(context.Background(), strings.NewReader(`{"protocol":1,"action":"schema"}`), &out, readTool); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"permissions":{"read":["**"]}`) {
		t.Errorf("schema: %s", out.String())
	}
}

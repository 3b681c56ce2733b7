package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/runtimetest"
	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

// toolArg, as the first argument, makes the test binary a VFS tool built
// with the SDK (see TestMain); childArg makes it a child that a tool
// started, which sleeps with its token on its command line.
const (
	toolArg  = "lathe-vfs-test-tool"
	childArg = "lathe-vfs-test-child"
)

// probeIn asks the probe tool to try something itself, with system calls
// of its own: what a VFS tool must not be able to do.
type probeIn struct {
	Op   string `json:"op"` // read, list, connect, env, wd, write
	Path string `json:"path,omitempty"`
	Addr string `json:"addr,omitempty"`
}

// hostIn asks the host tool to send one host request and report the
// result or the error.
type hostIn struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// rawIn asks the raw tool to write lines to standard output itself, then
// read as many response lines as it says, and answer with them.
type rawIn struct {
	Lines     []string `json:"lines"`
	Responses int      `json:"responses"`
}

// lingerIn asks the linger tool to answer, and then to go on: to start a
// child holding its standard output (token names it), and to send a host
// request a moment after its answer.
type lingerIn struct {
	Token string `json:"token"`
	Path  string `json:"path"`
}

// vfsTools are the tools of the tests: the conformance suite's, written
// against the host API where they need the host, and the probes.
func vfsTools() []sdk.Tool {
	return []sdk.Tool{
		sdk.Func(sdk.Definition{Name: runtimetest.Echo, Summary: "Echo the text."},
			func(_ context.Context, in runtimetest.TextIn) (*tool.Result, error) {
				r := tool.TextResult(in.Text)
				r.Structured, _ = json.Marshal(map[string]string{"text": in.Text})
				return r, nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Fail, Summary: "Fail."},
			func(_ context.Context, in runtimetest.MessageIn) (string, error) {
				return "", fmt.Errorf("%s: %w", in.Message, errors.New("the cause"))
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Sleep, Summary: "Wait until stopped."},
			func(ctx context.Context, in runtimetest.MarkerIn) (string, error) {
				// Its process id means nothing outside its PID namespace;
				// the marker says only that it started, through the host.
				h, ok := sdk.Host(ctx)
				if !ok {
					return "", errors.New("no host")
				}
				if err := h.Call(ctx, "fs/write", map[string]any{"path": in.Marker, "data": []byte("started\n"), "append": true}, nil); err != nil {
					return "", err
				}
				<-ctx.Done()
				return "", ctx.Err()
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Crash, Summary: "Die."},
			func(_ context.Context, in runtimetest.MessageIn) (string, error) {
				fmt.Fprintln(os.Stderr, in.Message)
				os.Exit(3)
				return "", nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Huge, Summary: "Write a lot."},
			func(_ context.Context, in runtimetest.SizeIn) (string, error) {
				return strings.Repeat("x", in.Size), nil
			}),
		sdk.Func(sdk.Definition{Name: runtimetest.Ask, Summary: "Ask first."},
			func(ctx context.Context, in runtimetest.SubjectIn) (string, error) {
				ok, err := sdk.AskBool(ctx, "confirm", "Go ahead with "+in.Subject+"?")
				if err != nil {
					return "", err
				}
				if !ok {
					return "", errors.New("declined " + in.Subject)
				}
				return "confirmed " + in.Subject, nil
			}),
		sdk.Func(sdk.Definition{Name: "probe", Summary: "Try something with system calls of its own."}, probe),
		sdk.Func(sdk.Definition{Name: "host", Summary: "Send one host request."},
			func(ctx context.Context, in hostIn) (map[string]any, error) {
				h, ok := sdk.Host(ctx)
				if !ok {
					return nil, errors.New("no host")
				}
				var res json.RawMessage
				err := h.Call(ctx, in.Method, in.Params, &res)
				var he *sdk.HostError
				if errors.As(err, &he) {
					return map[string]any{"code": he.Code, "message": he.Message}, nil
				}
				if err != nil {
					return nil, err
				}
				return map[string]any{"result": res}, nil
			}),
		sdk.Func(sdk.Definition{Name: "raw", Summary: "Write lines itself."},
			func(ctx context.Context, in rawIn) (map[string]any, error) {
				for _, l := range in.Lines {
					os.Stdout.WriteString(l + "\n")
				}
				// The request was one line; what follows is the host's.
				var got []string
				buf := make([]byte, 1)
				var line []byte
				for len(got) < in.Responses {
					if _, err := os.Stdin.Read(buf); err != nil {
						return map[string]any{"responses": got, "eof": true}, nil
					}
					if buf[0] == '\n' {
						got = append(got, string(line))
						line = nil
						continue
					}
					line = append(line, buf[0])
				}
				return map[string]any{"responses": got}, nil
			}),
		sdk.Func(sdk.Definition{Name: "sdkops", Summary: "Use every method of the SDK's host client."}, sdkOps),
		sdk.Func(sdk.Definition{Name: "linger", Summary: "Answer and go on."},
			func(ctx context.Context, in lingerIn) (string, error) {
				child := exec.Command(os.Args[0], childArg, in.Token)
				child.Stdout = os.Stdout // the child holds standard output
				if err := child.Start(); err != nil {
					return "", err
				}
				time.Sleep(200 * time.Millisecond)
				// The answer, then a request after it, in one write.
				os.Stdout.WriteString(`{"type":"success","content":"answered"}` + "\n" +
					fmt.Sprintf(`{"jsonrpc":"2.0","id":99,"method":"fs/write","params":{"path":%q,"data":"bGF0ZQ=="}}`, in.Path) + "\n")
				time.Sleep(time.Hour)
				return "", nil
			}),
	}
}

// lingerMain is what the linger tool's child does: sleep, holding the
// standard output it was given.
func lingerMain() {
	time.Sleep(time.Hour)
}

func probe(_ context.Context, in probeIn) (map[string]any, error) {
	switch in.Op {
	case "read":
		b, err := os.ReadFile(in.Path)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		return map[string]any{"data": string(b)}, nil
	case "list":
		es, err := os.ReadDir(in.Path)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return map[string]any{"names": names}, nil
	case "write":
		if err := os.WriteFile(in.Path, []byte("planted"), 0o644); err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		return map[string]any{"written": true}, nil
	case "connect":
		c, err := net.DialTimeout("tcp", in.Addr, 2*time.Second)
		if err != nil {
			return map[string]any{"error": err.Error()}, nil
		}
		fmt.Fprintf(c, "GET / HTTP/1.0\r\n\r\n")
		b := make([]byte, 512)
		n, _ := c.Read(b)
		c.Close()
		return map[string]any{"data": string(b[:n])}, nil
	case "env":
		return map[string]any{"env": os.Environ()}, nil
	case "wd":
		wd, _ := os.Getwd()
		es, _ := os.ReadDir(".")
		return map[string]any{"wd": wd, "entries": len(es)}, nil
	}
	return nil, fmt.Errorf("unknown op %q", in.Op)
}

// opsIn names what sdkops reaches: a URL to fetch.
type opsIn struct {
	URL string `json:"url"`
}

// sdkOps calls each typed method of the host client once and reports
// what each returned, an error as its text.
func sdkOps(ctx context.Context, in opsIn) (map[string]any, error) {
	h, ok := sdk.Host(ctx)
	if !ok {
		return nil, errors.New("no host")
	}
	out := map[string]any{}
	put := func(k string, v any, err error) {
		if err != nil {
			var he *sdk.HostError
			if errors.As(err, &he) {
				out[k] = map[string]any{"code": he.Code, "denied": he.Denied(), "message": he.Message}
				return
			}
			out[k] = map[string]any{"error": err.Error()}
			return
		}
		out[k] = v
	}
	put("write", nil, h.WriteFile(ctx, "out/a.txt", []byte("hello vfs")))
	data, err := h.ReadFile(ctx, "out/a.txt")
	put("read", string(data), err)
	fi, err := h.Stat(ctx, "out/a.txt")
	put("stat", fi, err)
	list, err := h.List(ctx, "out")
	put("list", list, err)
	put("remove", nil, h.Remove(ctx, "out/a.txt", false))
	_, err = h.Stat(ctx, "out/a.txt")
	put("stat_removed", nil, err)
	v, set, err := h.Getenv(ctx, "LATHE_VFS_TEST_VAR")
	put("env", map[string]any{"value": v, "set": set}, err)
	_, _, err = h.Getenv(ctx, "LATHE_VFS_TEST_SECRET")
	put("env_denied", nil, err)
	put("log", nil, h.Log(ctx, "info", "logged from vfs"))
	put("progress", nil, h.Progress(ctx, 1, 2, "half"))
	a, err := h.Ask(ctx, "Proceed?", nil)
	put("ask", a, err)
	r, err := h.Run(ctx, sdk.RunRequest{Argv: []string{"echo", "ran"}})
	if r != nil {
		put("run", map[string]any{"exit": r.ExitCode, "stdout": string(r.Stdout)}, err)
	} else {
		put("run", nil, err)
	}
	f, err := h.Fetch(ctx, sdk.FetchRequest{URL: in.URL})
	if f != nil {
		put("fetch", map[string]any{"status": f.Status, "body": string(f.Body)}, err)
	} else {
		put("fetch", nil, err)
	}
	_, err = h.ReadFile(ctx, "secret.txt")
	put("read_denied", nil, err)
	return out, nil
}

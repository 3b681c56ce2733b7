// Command guest is the Go tool of the wasm runtime's tests, built with
// GOOS=wasip1 GOARCH=wasm: the tools of the conformance suite, written with
// package sdk as a native tool would be, and the attacks of the escape
// suite, each trying what a hostile module would.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/sdk"
	"github.com/lathe-tools/lathe/tool"
)

type (
	textIn struct {
		Text string `json:"text"`
	}
	messageIn struct {
		Message string `json:"message"`
	}
	markerIn struct {
		Marker string `json:"marker"`
	}
	sizeIn struct {
		Size int `json:"size" jsonschema:"minimum=1"`
	}
	subjectIn struct {
		Subject string `json:"subject"`
	}
	pathIn struct {
		Path string `json:"path"`
	}
	writeIn struct {
		Path string `json:"path"`
		Data string `json:"data"`
	}
	linkIn struct {
		Target string `json:"target"`
		Link   string `json:"link"`
	}
	hostIn struct {
		Lines []string `json:"lines"`
	}
)

var stdin = bufio.NewReader(os.Stdin)

func main() {
	sdk.Serve(
		sdk.Func(sdk.Definition{Name: "echo", Summary: "Echo the text."},
			func(_ context.Context, in textIn) (*tool.Result, error) {
				r := tool.TextResult(in.Text)
				r.Structured, _ = json.Marshal(map[string]string{"text": in.Text})
				return r, nil
			}),
		sdk.Func(sdk.Definition{Name: "fail", Summary: "Fail."},
			func(_ context.Context, in messageIn) (string, error) {
				return "", fmt.Errorf("%s: %w", in.Message, errors.New("the cause"))
			}),
		// A module runs no process, so the marker gets "started" only; it
		// then spins on the clock until lathe stops it.
		sdk.Func(sdk.Definition{Name: "sleep", Summary: "Wait until stopped."},
			func(_ context.Context, in markerIn) (string, error) {
				f, err := os.OpenFile(in.Marker, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				if err != nil {
					return "", err
				}
				fmt.Fprintln(f, "started")
				f.Close()
				for {
					time.Sleep(5 * time.Millisecond)
				}
			}),
		sdk.Func(sdk.Definition{Name: "crash", Summary: "Die."},
			func(_ context.Context, in messageIn) (string, error) {
				fmt.Fprintln(os.Stderr, in.Message)
				os.Exit(3)
				return "", nil
			}),
		sdk.Func(sdk.Definition{Name: "huge", Summary: "Write a lot."},
			func(_ context.Context, in sizeIn) (string, error) {
				return strings.Repeat("x", in.Size), nil
			}),
		sdk.Func(sdk.Definition{Name: "ask", Summary: "Ask first."},
			func(ctx context.Context, in subjectIn) (string, error) {
				ok, err := sdk.AskBool(ctx, "confirm", "Go ahead with "+in.Subject+"?")
				if err != nil {
					return "", err
				}
				if !ok {
					return "", errors.New("declined " + in.Subject)
				}
				return "confirmed " + in.Subject, nil
			}),
		sdk.Func(sdk.Definition{Name: "read", Summary: "Read a file."},
			func(_ context.Context, in pathIn) (string, error) {
				b, err := os.ReadFile(in.Path)
				return string(b), err
			}),
		sdk.Func(sdk.Definition{Name: "list", Summary: "List a directory."},
			func(_ context.Context, in pathIn) (string, error) {
				es, err := os.ReadDir(in.Path)
				var names []string
				for _, e := range es {
					names = append(names, e.Name())
				}
				return strings.Join(names, "\n"), err
			}),
		sdk.Func(sdk.Definition{Name: "write", Summary: "Write a file."},
			func(_ context.Context, in writeIn) (string, error) {
				return "written", os.WriteFile(in.Path, []byte(in.Data), 0o644)
			}),
		sdk.Func(sdk.Definition{Name: "remove", Summary: "Remove a file."},
			func(_ context.Context, in pathIn) (string, error) {
				return "removed", os.Remove(in.Path)
			}),
		sdk.Func(sdk.Definition{Name: "symlink", Summary: "Make a symbolic link."},
			func(_ context.Context, in linkIn) (string, error) {
				return "linked", os.Symlink(in.Target, in.Link)
			}),
		sdk.Func(sdk.Definition{Name: "net", Summary: "Try every way to the network."},
			func(_ context.Context, _ struct{}) (map[string]string, error) {
				out := map[string]string{}
				if c, err := net.Dial("tcp", "127.0.0.1:1"); err != nil {
					out["dial"] = err.Error()
				} else {
					c.Close()
					out["dial"] = "connected"
				}
				// A socket handed over by the host would be a preopened
				// descriptor: try to accept on every one a module could have.
				opened := 0
				for fd := 0; fd < 64; fd++ {
					if nfd, _, err := syscall.Accept(fd); err == nil {
						syscall.Close(nfd)
						opened++
						out[fmt.Sprintf("accept %d", fd)] = "accepted"
					}
				}
				out["accepted"] = fmt.Sprint(opened)
				return out, nil
			}),
		sdk.Func(sdk.Definition{Name: "membomb", Summary: "Allocate without end."},
			func(_ context.Context, _ struct{}) (string, error) {
				var keep [][]byte
				for {
					b := make([]byte, 8<<20)
					for i := range b {
						b[i] = byte(i)
					}
					keep = append(keep, b)
				}
			}),
		// flood sends host requests and never reads their answers.
		sdk.Func(sdk.Definition{Name: "flood", Summary: "Ask without reading."},
			func(_ context.Context, in pathIn) (string, error) {
				for i := 0; ; i++ {
					if _, err := fmt.Fprintf(os.Stdout, `{"jsonrpc":"2.0","id":%d,"method":"fs/read","params":{"path":%q}}`+"\n", i, in.Path); err != nil {
						return "", err
					}
				}
			}),
		sdk.Func(sdk.Definition{Name: "nap", Summary: "Sleep for an hour in one go."},
			func(_ context.Context, _ struct{}) (string, error) {
				time.Sleep(time.Hour)
				return "rested", nil
			}),
		sdk.Func(sdk.Definition{Name: "spin", Summary: "Loop without end, never calling the host."},
			func(_ context.Context, _ struct{}) (string, error) {
				n := 0
				for {
					n++
				}
			}),
		// hostcall writes each line on standard output as a host request
		// and reads the host's answer on standard input.
		sdk.Func(sdk.Definition{Name: "hostcall", Summary: "Send host requests."},
			func(_ context.Context, in hostIn) (string, error) {
				var answers []string
				for _, l := range in.Lines {
					fmt.Fprintln(os.Stdout, l)
					a, err := stdin.ReadString('\n')
					if err != nil {
						return strings.Join(answers, "\n"), fmt.Errorf("no answer to %s: %v", l, err)
					}
					answers = append(answers, strings.TrimSpace(a))
				}
				return strings.Join(answers, "\n"), nil
			}),
		// sdkhost reads files through the SDK's host client, the same code
		// as a VFS tool's.
		sdk.Func(sdk.Definition{Name: "sdkhost", Summary: "Read files through the SDK's host client."},
			func(ctx context.Context, in hostIn) (string, error) {
				h, ok := sdk.Host(ctx)
				if !ok {
					return "", errors.New("no host API")
				}
				var got []string
				for _, p := range in.Lines {
					b, err := h.ReadFile(ctx, p)
					if err != nil {
						var he *sdk.HostError
						if errors.As(err, &he) && he.Denied() {
							got = append(got, "denied")
							continue
						}
						return strings.Join(got, "\n"), err
					}
					got = append(got, string(b))
				}
				return strings.Join(got, "\n"), nil
			}),
		sdk.Func(sdk.Definition{Name: "env", Summary: "Report the module's environment."},
			func(ctx context.Context, _ struct{}) (map[string]any, error) {
				wd, _ := os.Getwd()
				return map[string]any{"root": sdk.Root(ctx), "wd": wd, "env": os.Environ(), "args": os.Args,
					"now": time.Now().Year()}, nil
			}),
	)
}

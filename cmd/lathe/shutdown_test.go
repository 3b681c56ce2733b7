package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// exitBound is how long lathe serve may take to exit after SIGTERM or
// SIGINT: a person or a supervisor that stops it must not have to kill it.
const exitBound = 10 * time.Second

// TestServeExitsOnSignal starts the real binary as `lathe serve`, over
// stdio and over HTTP, makes a call that waits (for an approval nobody
// answers, or a tool that runs until it is cancelled), and stops it with a
// signal: it must exit within exitBound, end the client's call, and leave
// every audit record complete, its outcome "cancelled".
func TestServeExitsOnSignal(t *testing.T) {
	bin, err := exec.LookPath("lathe-test")
	if err != nil {
		t.Fatalf("the test binary as lathe-test is not on PATH: %v", err)
	}
	for _, transport := range []string{"stdio", "http"} {
		for _, c := range []struct {
			name string
			tool string
			sig  syscall.Signal
		}{
			// write_file is destructive: the policy asks the client, whose
			// person never answers.
			{"pending approval", "write_file", syscall.SIGTERM},
			// slow runs until it is cancelled; the configuration allows it.
			{"long call", "slow", syscall.SIGINT},
		} {
			t.Run(transport+"/"+c.name, func(t *testing.T) {
				ws := t.TempDir()
				home := t.TempDir()
				env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
					"XDG_STATE_HOME="+filepath.Join(home, "state"), "LATHE_TOKEN=s3cret-token")
				os.WriteFile(filepath.Join(ws, "lathe.toml"), []byte("[[policy.rules]]\ntool = \"slow\"\napproval = \"allow\"\n"), 0o644)
				runBounded(t, env, bin, "--workspace", ws, "trust", "--yes")

				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cmd := exec.Command(bin, "--workspace", ws, "serve")
				if transport == "http" {
					cmd.Args = append(cmd.Args, "--http", "127.0.0.1:0")
				}
				cmd.Env = env
				stderr := &lockedBuffer{}
				cmd.Stderr = stderr
				asked := make(chan struct{}, 1)
				// gone is closed when the server has exited: under MCP
				// 2026-07-28 the question comes back in the call's result,
				// and the client's handler runs within its own CallTool.
				gone := make(chan struct{})
				opts := &sdk.ClientOptions{
					ElicitationHandler: func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						// The person never answers.
						asked <- struct{}{}
						select {
						case <-ctx.Done():
							return nil, ctx.Err()
						case <-gone:
							return nil, errors.New("the server is gone")
						}
					},
				}
				client := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts)
				var cs *sdk.ClientSession
				if transport == "stdio" {
					in, _ := cmd.StdinPipe()
					out, _ := cmd.StdoutPipe()
					if err = cmd.Start(); err != nil {
						t.Fatal(err)
					}
					cs, err = client.Connect(ctx, &sdk.IOTransport{Reader: out, Writer: in}, nil)
				} else {
					if err = cmd.Start(); err != nil {
						t.Fatal(err)
					}
					url := waitOutput(t, stderr, regexp.MustCompile(`serving MCP at (\S+)`), "the HTTP address")
					cs, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
						HTTPClient: &http.Client{Transport: bearer("s3cret-token")}}, nil)
				}
				if err != nil {
					cmd.Process.Kill()
					t.Fatalf("connecting: %v; stderr: %s", err, stderr)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				defer func() {
					cmd.Process.Kill()
					cs.Close()
				}()

				called := make(chan error, 1)
				go func() {
					args := map[string]any{}
					if c.tool == "write_file" {
						args = map[string]any{"path": "x.txt", "content": "x"}
					}
					r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: args})
					if err == nil && r.IsError {
						err = fmt.Errorf("error result: %v", r.Content)
					}
					called <- err
				}()
				if c.tool == "slow" {
					waitOutput(t, stderr, regexp.MustCompile(`slow: started`), "the slow tool to start", called)
					select {
					case <-asked:
						t.Fatal("the configuration allows slow, and its approval was asked")
					default:
					}
				} else {
					select {
					case <-asked:
					case err := <-called:
						t.Fatalf("the call ended before its approval was asked: %v; stderr: %s", err, stderr)
					case <-time.After(20 * time.Second):
						t.Fatalf("the approval of %s was not asked within 20s; stderr: %s", c.tool, stderr)
					}
				}

				cmd.Process.Signal(c.sig)
				select {
				case err := <-exited:
					close(gone)
					if err != nil {
						t.Errorf("lathe serve exited with %v after %v; stderr: %s", err, c.sig, stderr)
					}
				case <-time.After(exitBound):
					// Its goroutines say what hung.
					cmd.Process.Signal(syscall.SIGQUIT)
					select {
					case <-exited:
					case <-time.After(5 * time.Second):
					}
					t.Fatalf("lathe serve did not exit within %s of %v during a %s; stderr: %s", exitBound, c.sig, c.name, stderr)
				}
				select {
				case <-called:
				case <-time.After(exitBound):
					t.Fatalf("the client's call of %s did not end within %s of the server's exit", c.tool, exitBound)
				}

				out := runBounded(t, env, bin, "--workspace", ws, "audit", "--json")
				var recs []struct {
					Tool       string `json:"tool"`
					Status     string `json:"status"`
					Incomplete bool   `json:"incomplete"`
					Outcome    string `json:"outcome"`
				}
				if err := json.Unmarshal([]byte(out), &recs); err != nil {
					t.Fatalf("lathe audit --json: %v\n%s", err, out)
				}
				found := false
				for _, r := range recs {
					if r.Incomplete || r.Status != "done" {
						t.Errorf("audit record of %s is incomplete (status %q) after lathe serve exited", r.Tool, r.Status)
					}
					if r.Tool == c.tool {
						found = true
						if r.Outcome != "cancelled" {
							t.Errorf("audit record of %s: outcome %q, want cancelled", r.Tool, r.Outcome)
						}
					}
				}
				if !found {
					t.Errorf("no audit record of %s: %s", c.tool, out)
				}
			})
		}
	}
}

// runBounded runs the binary to completion within 30s and returns its
// standard output.
func runBounded(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lathe %s: %v (within 30s?); stderr: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// waitOutput waits up to 20s for re to match what the server wrote, and
// returns the first group, if any.
func waitOutput(t *testing.T, b *lockedBuffer, re *regexp.Regexp, what string, ended ...chan error) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, c := range ended {
			select {
			case err := <-c:
				t.Fatalf("the call ended while waiting for %s: %v; stderr: %s", what, err, b)
			default:
			}
		}
		if m := re.FindStringSubmatch(b.String()); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s; stderr: %s", what, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

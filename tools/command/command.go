// Package command provides run_command, the standard tool that runs a
// command line with /bin/sh in the workspace, under a sandbox profile.
//
// It is a process tool (package process) whose program is the shell:
//
//	t, err := command.New(root, sandbox.Config{Profile: sandbox.Standard})
//	e.Register(t)
//
// so it starts, confines, stops and reaps its processes as every process
// lathe starts does ([process.Start]): its own session and process group,
// no terminal, SIGTERM and then, after a grace period, the end of
// everything it started (even what left its group), nothing left behind
// after the call or after lathe. Each run has a private HOME, never the
// workspace, so that the caches of Go, npm and the like do not land in the
// repository; the project's docs/security.md has a recipe for builds that
// should keep their caches.
//
// It lives apart from package tools because the sandbox's init is C:
// package tools, the file tools, builds without cgo.
package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// Name is the name of the tool.
const Name = "run_command"

// New returns run_command for the workspace root, an existing directory,
// running command lines under cfg: its Workspace is set to root (its links
// resolved), lathe's state directory is hidden from it, and a zero Profile
// means the standard profile. cfg.Limits.Wall bounds each run and
// cfg.Limits.Output what the model gets of its output.
func New(root string, cfg sandbox.Config) (tool.Tool, error) {
	ws, err := filepath.EvalSymlinks(root)
	if err != nil {
		return tool.Tool{}, fmt.Errorf("%s: workspace: %w", Name, err)
	}
	if ws, err = filepath.Abs(ws); err != nil {
		return tool.Tool{}, fmt.Errorf("%s: workspace: %w", Name, err)
	}
	cfg.Workspace = ws
	// lathe's own state (audit log, grants) is out of a command's reach, as
	// it is out of the file tools'.
	cfg.Hide = append(append([]string{}, cfg.Hide...), tools.StateDir)
	if _, err := sandbox.ParseProfile(string(cfg.Profile)); err != nil {
		return tool.Tool{}, fmt.Errorf("%s: %w", Name, err)
	}
	lim := cfg.Limits.WithDefaults()
	// The shell is the program and the command line its script: one
	// element of argv, never spliced into another script.
	rt, err := process.New(process.Command{Argv: []string{"/bin/sh", "-c", "{command}"}, Dir: ws, Env: cfg.Perms.Env},
		process.Options{MaxOutputBytes: lim.Output, Sandbox: cfg.Wrap, MergeStderr: true})
	if err != nil {
		return tool.Tool{}, fmt.Errorf("%s: %w", Name, err)
	}
	network := "The command has no network access."
	if cfg.Perms.Network {
		network = "The command may use the network."
	}
	def := tool.Definition{
		Name:    Name,
		Summary: "Run a shell command line in the workspace.",
		Description: fmt.Sprintf(`Run a command line with /bin/sh in the workspace root and return its exit status and its output (standard output and standard error, interleaved).

The command runs in a sandbox: it can read and write the workspace and read the system's programs and libraries, nothing else. %s Only a few environment variables are set; HOME is a private directory that lasts one run. It is stopped after %v, and its output is cut at %d bytes.

A command that exits with a non-zero status fails; its output is still returned.`, network, lim.Wall, lim.Output),
		InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string","description":"A command line for /bin/sh; it runs in the workspace root"}},"required":["command"],"additionalProperties":false}`),
		Annotations: tool.Annotations{Title: "Run command", DestructiveHint: tool.Bool(true),
			OpenWorldHint: tool.Bool(cfg.Perms.Network)},
		Source:  "builtin",
		Runtime: process.RuntimeName,
	}
	return tool.Tool{Definition: def, Runtime: &runtime{rt: rt, wall: lim.Wall}}, nil
}

// runtime is the process runtime of the shell, with run_command's wall
// time and its reading of failures.
type runtime struct {
	rt   *process.Runtime
	wall time.Duration
}

var (
	_ tool.Runtime     = (*runtime)(nil)
	_ tool.Closer      = (*runtime)(nil)
	_ tool.Cooperative = (*runtime)(nil)
)

// Cooperative reports true: the process runtime returns once the command's
// processes are gone.
func (r *runtime) Cooperative() bool { return true }

// Close stops the runs in flight and waits for their processes.
func (r *runtime) Close() error { return r.rt.Close() }

func (r *runtime) Execute(ctx context.Context, def *tool.Definition, call *tool.Call) (*tool.Outcome, error) {
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(orEmpty(call.Arguments)), &in); err != nil {
		return nil, &tool.Error{Kind: tool.KindInvalidArguments, Tool: def.Name, Message: "arguments do not decode: " + err.Error()}
	}
	if strings.TrimSpace(in.Command) == "" {
		return nil, &tool.Error{Kind: tool.KindInvalidArguments, Tool: def.Name, Message: "command is empty"}
	}
	runCtx := ctx
	if r.wall > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, r.wall)
		defer cancel()
	}
	out, err := r.rt.Execute(runCtx, def, call)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return nil, &tool.Error{Kind: tool.KindTimeout, Tool: def.Name,
			Message: fmt.Sprintf("the command was stopped after %v", r.wall)}
	case errors.Is(err, process.ErrOutputLimit):
		// The command ran and said too much: the model should ask for less.
		return &tool.Outcome{Result: &tool.Result{
			Content: []tool.Content{{Type: tool.ContentText, Text: "the command was stopped: " + err.Error()}},
			IsError: true, ErrorKind: tool.KindToolError,
		}}, nil
	}
	return nil, err
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
}

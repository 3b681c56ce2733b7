//go:build unix

package tools

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
)

// RunCommand is the name of the tool that runs a shell command line.
const RunCommand = "run_command"

type runIn struct {
	Command string `json:"command" jsonschema:"description=A command line for /bin/sh; it runs in the workspace root"`
}

func (s *set) runTool() (tool.Tool, error) {
	cfg := *s.opts.Command
	cfg.Workspace = s.ws.Dir()
	// lathe's own state (audit log, grants) is out of a command's reach, as
	// it is out of the file tools'.
	cfg.Hide = append(append([]string{}, cfg.Hide...), StateDir)
	if _, err := sandbox.ParseProfile(string(cfg.Profile)); err != nil {
		return tool.Tool{}, err
	}
	lim := cfg.Limits.WithDefaults()
	network := "The command has no network access."
	if cfg.Perms.Network {
		network = "The command may use the network."
	}
	def := tool.Definition{
		Name:    RunCommand,
		Summary: "Run a shell command line in the workspace.",
		Description: fmt.Sprintf(`Run a command line with /bin/sh in the workspace root and return its exit status, standard output and standard error.

The command runs in a sandbox: it can read and write the workspace and read the system's programs and libraries, nothing else. %s Only a few environment variables are set; HOME is the workspace. It is stopped after %v, and its output is cut at %d bytes.

A command that exits with a non-zero status fails; its output is still returned.`, network, lim.Wall, lim.Output),
		Annotations: tool.Annotations{Title: "Run command", DestructiveHint: tool.Bool(true),
			OpenWorldHint: tool.Bool(cfg.Perms.Network)},
	}
	return builtin.Func(def, func(ctx context.Context, in runIn) (string, error) {
		return runCommand(ctx, cfg, lim, in.Command)
	})
}

// runCommand runs line under cfg. A non-zero exit is an error whose text
// carries the output, so that the model sees both.
func runCommand(ctx context.Context, cfg sandbox.Config, lim sandbox.Limits, line string) (string, error) {
	if strings.TrimSpace(line) == "" {
		return "", invalidArg("command is empty")
	}
	if lim.Wall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.Wall)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Dir = cfg.Workspace
	cmd.Env = cfg.Env()
	// Every profile, dev included, starts the command through Wrap: in a
	// session of its own (no terminal; its own process group, which the
	// kills below address), supervised so that nothing it starts outlives
	// it or lathe.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// At once, and everything the command started, even what left its
	// group: the supervising init does it (sandbox.Kill).
	cmd.Cancel = func() error { return sandbox.Kill(cmd) }
	cmd.WaitDelay = time.Second
	out := &capWriter{max: lim.Output, cmd: cmd}
	cmd.Stdout, cmd.Stderr = out, out
	cleanup, err := cfg.Wrap(cmd)
	defer cleanup()
	if err != nil {
		return "", &tool.Error{Kind: tool.KindRuntimeFailure, Message: err.Error()}
	}
	err = cmd.Run()
	if cmd.Process != nil {
		// Whatever the command left running in its group goes with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	text := out.text()
	var ee *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "", &tool.Error{Kind: tool.KindTimeout, Message: fmt.Sprintf("the command was stopped after %v\n%s", lim.Wall, text)}
	case ctx.Err() != nil:
		return "", ctx.Err()
	case out.over:
		return "", fmt.Errorf("the command was stopped: its output passed %d bytes\n%s", lim.Output, text)
	case errors.As(err, &ee):
		return "", fmt.Errorf("%v\n%s", ee.ProcessState, text)
	case err != nil:
		return "", &tool.Error{Kind: tool.KindRuntimeFailure, Message: err.Error()}
	}
	return text, nil
}

// capWriter keeps up to max bytes of the command's output; past it, it
// kills the command's process group.
type capWriter struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	over bool
	cmd  *exec.Cmd
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return len(p), nil
	}
	if len(w.buf)+len(p) > w.max {
		w.buf = append(w.buf, p[:w.max-len(w.buf)]...)
		w.over = true
		sandbox.Kill(w.cmd)
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	return len(p), nil
}

func (w *capWriter) text() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}

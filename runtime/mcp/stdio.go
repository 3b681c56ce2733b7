package mcp

import (
	"context"
	"io"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/process"
)

// stdioTransport starts a server's command and speaks to it over its
// standard input and output, newline-delimited JSON, as the SDK's
// CommandTransport does, through a connection of lathe's own (see
// [stdioConn]), with one difference: what the server writes passes through
// [screen] before it is decoded. The SDK decodes a message
// whole, so a tools/list answer that one tool spoils (nested past the JSON
// decoder's depth, say) would otherwise end the session and cost every tool
// of the server; screened, it costs that tool.
//
// The process starts through [process.Start], as every process lathe starts
// does: in a session of its own, supervised or sandboxed, so that nothing
// it starts outlives the session or lathe.
type stdioTransport struct {
	cmd     *exec.Cmd
	sandbox func(*exec.Cmd) (func(), error)
	grace   time.Duration
	cap     *capture
	// started receives the process once it has started.
	started func(*process.Proc)
}

// maxLine bounds one message from a server, as the SDK's own default does.
const maxLine = sdk.DefaultMaxLineLength

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	pr, err := process.Start(context.Background(), t.cmd, process.StartOptions{GracePeriod: t.grace, Sandbox: t.sandbox})
	if err != nil {
		return nil, err
	}
	if t.started != nil {
		t.started(pr)
	}
	return newStdioConn(&proc{p: pr, stdin: stdin, grace: t.grace}, stdout, t.cap), nil
}

// proc is the server's process, seen as the writing end of the session.
// Closing it ends the process as MCP asks a client to: standard input is
// closed, and a server that has not exited a grace period later is stopped
// (SIGTERM to its group), and killed with everything it started as long
// again after that.
type proc struct {
	p     *process.Proc
	stdin io.WriteCloser
	grace time.Duration
	once  sync.Once
}

func (p *proc) Write(b []byte) (int, error) { return p.stdin.Write(b) }

func (p *proc) Close() error {
	p.once.Do(func() {
		p.stdin.Close()
		done := make(chan struct{})
		go func() {
			p.p.Wait()
			close(done)
		}()
		t := time.NewTimer(p.grace)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-t.C:
		}
		p.p.Stop()
		<-done
	})
	return nil
}

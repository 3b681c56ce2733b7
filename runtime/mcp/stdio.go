package mcp

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/runtime/process"
)

// stdioTransport starts a server's command and speaks to it over its
// standard input and output, newline-delimited JSON, as the SDK's
// CommandTransport does, with one difference: what the server writes passes
// through [screen] before the SDK decodes it. The SDK decodes a message
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
	p := &proc{p: pr, stdin: stdin, grace: t.grace}
	r := &screenReader{src: bufio.NewReaderSize(stdout, 64<<10), cap: t.cap, proc: p}
	return (&sdk.IOTransport{Reader: r, Writer: p, MaxLineLength: maxLine}).Connect(ctx)
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

// screenReader passes on what the server writes, line by line, screening
// the answers to tools/list requests (see [screen]).
type screenReader struct {
	src  *bufio.Reader
	cap  *capture
	proc *proc
	buf  []byte
	err  error
}

func (r *screenReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		line, err := r.line()
		r.err = err
		if len(line) > 0 && r.cap != nil {
			line = r.cap.screen(line)
		}
		r.buf = line
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// line reads up to and including the next newline. A line longer than
// maxLine is passed on as it comes, unscreened, for the SDK to refuse.
func (r *screenReader) line() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.src.ReadSlice('\n')
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(line) > maxLine {
				return line, nil
			}
			continue
		}
		return line, err
	}
}

// Close ends the server's process: the session is over.
func (r *screenReader) Close() error { return r.proc.Close() }

package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/lathe-tools/lathe/runtime/process"
)

// run runs a program the tool's run key names, with argv as given (never
// through a shell), under the host's sandbox profile, through the one
// helper that starts every process of lathe.
func (s *Session) run(ctx context.Context, p RunParams) (any, *Error) {
	o := s.begin(KindRun, commandLine(p.Argv))
	if len(p.Argv) == 0 || p.Argv[0] == "" {
		o.approval, o.by = "deny", "host"
		return nil, s.finish(ctx, o, invalid("proc/run: argv is empty; argv[0] is the program"))
	}
	for _, a := range p.Argv {
		if strings.IndexByte(a, 0) >= 0 {
			o.approval, o.by = "deny", "host"
			return nil, s.finish(ctx, o, invalid("proc/run: an argument contains a NUL byte"))
		}
	}
	prog := p.Argv[0]
	entry := s.h.perms.runAllows(prog, s.h.cfg.Workspace)
	if entry == nil {
		return nil, s.deny(ctx, o, "permissions", s.h.outside(fmt.Sprintf("running %q", prog), prog, "run"))
	}
	path, denial := s.h.program(entry)
	if denial != "" {
		return nil, s.deny(ctx, o, "host", denial)
	}
	dir := s.h.cfg.Workspace
	if p.Dir != "" {
		rel, err := s.h.ws.Resolve(p.Dir)
		if err != nil {
			e := fromTool(err)
			if e.Code == CodeDenied {
				return nil, s.deny(ctx, o, "host", "proc/run: dir: "+e.Message)
			}
			o.approval, o.by = "deny", "host"
			return nil, s.finish(ctx, o, e)
		}
		dir = filepath.Join(dir, rel)
	}
	if e := s.decide(ctx, o); e != nil {
		return nil, e
	}
	if int64(len(p.Stdin)) > s.h.cfg.Limits.Write {
		return nil, s.finish(ctx, o, tooLarge("proc/run: stdin's %d bytes are over the host's limit of %d", len(p.Stdin), s.h.cfg.Limits.Write))
	}
	sc := s.h.sandbox
	lim := sc.Limits.WithDefaults()
	if lim.Wall > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lim.Wall)
		defer cancel()
	}
	cmd := &exec.Cmd{Path: path, Args: p.Argv, Dir: dir, Env: sc.Env(), Stdin: bytes.NewReader(p.Stdin)}
	stdout := &capped{max: s.h.cfg.Limits.Output}
	stderr := &capped{max: s.h.cfg.Limits.Output}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	proc, err := process.Start(ctx, cmd, process.StartOptions{Sandbox: func(c *exec.Cmd) (func(), error) {
		w := sc
		// The program must be reachable wherever it is: its directory is
		// readable.
		w.Perms.Read = append(append([]string(nil), w.Perms.Read...), filepath.Dir(path))
		return w.Wrap(c)
	}})
	if err != nil {
		return nil, s.finish(ctx, o, failed("proc/run: %s did not start: %v", prog, err))
	}
	state, err := proc.Wait()
	var ee *exec.ExitError
	if state == nil && err != nil && !errors.As(err, &ee) {
		return nil, s.finish(ctx, o, failed("proc/run: %s: %v", prog, err))
	}
	if ctx.Err() != nil {
		return nil, s.finish(ctx, o, failed("proc/run: %s was stopped: %v", prog, context.Cause(ctx)))
	}
	res := RunResult{ExitCode: -1, Stdout: stdout.bytes(), Stderr: stderr.bytes(), Truncated: stdout.over || stderr.over}
	if state != nil {
		res.ExitCode = state.ExitCode()
	}
	o.bytes = int64(len(res.Stdout) + len(res.Stderr))
	s.finish(ctx, o, nil)
	return res, nil
}

// program returns the path of the program entry names, or why it may not
// run. A name is looked up in lathe's PATH; a program found inside the
// workspace that way is refused, since a tool that may write there could
// have put it there ("git" must not mean ./bin/git because PATH holds
// ./bin). A path entry names its program explicitly, wherever it is, but
// not in the tool's write scope.
func (h *Host) program(e *runEntry) (string, string) {
	if e.path != "" {
		// A program the tool may rewrite would run whatever the tool
		// wrote there: as good as no run key at all.
		real, err := filepath.EvalSymlinks(e.path)
		if err != nil {
			real = e.path
		}
		if r, ok := within([]string{h.cfg.Workspace}, real); ok && h.perms.canWrite(r) {
			return "", fmt.Sprintf("proc/run: %s lies in the tool's write scope, so the tool could replace the program it runs; it does not run", e.src)
		}
		return e.path, ""
	}
	p, err := exec.LookPath(e.name)
	if err != nil {
		if errors.Is(err, exec.ErrDot) {
			return "", fmt.Sprintf("proc/run: %s is found only relative to the current directory (PATH holds a relative entry); name it by its path in run", e.name)
		}
		return "", fmt.Sprintf("proc/run: %s is not found in PATH", e.name)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		real = p
	}
	if r, ok := within([]string{h.cfg.Workspace}, real); ok {
		return "", fmt.Sprintf("proc/run: %s is found in PATH at %s, inside the workspace, where a tool may have put it; name it by its path in run to run it", e.name, r)
	}
	return p, ""
}

// commandLine renders argv for the policy and the audit log, each
// argument that needs it quoted.
func commandLine(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`*?[]{}()<>|&;#~") {
			b.WriteString(strconv.Quote(a))
		} else {
			b.WriteString(a)
		}
	}
	return b.String()
}

// capped keeps what a stream writes up to max bytes and drops the rest:
// the program runs to its end (bounded by the call's deadline and the
// profile's wall time) and the tool gets the start of its output.
type capped struct {
	mu   sync.Mutex
	buf  []byte
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - int64(len(c.buf))
	if int64(len(p)) > room {
		c.buf = append(c.buf, p[:max64(room, 0)]...)
		c.over = true
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

func (c *capped) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		return []byte{}
	}
	return c.buf
}

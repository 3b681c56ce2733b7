package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// initArg0 is the argv[0] by which the re-executed binary knows it is to
// act as the sandbox's init.
const initArg0 = "lathe-sandbox-init"

// spec is what the init needs; it travels as argv[1], in JSON.
type spec struct {
	NewRoot   bool     `json:"new_root,omitempty"`
	Workspace string   `json:"workspace,omitempty"`
	Read      []string `json:"read,omitempty"`
	Write     []string `json:"write,omitempty"`
	Hide      []string `json:"hide,omitempty"`
	Network   bool     `json:"network,omitempty"`
	Landlock  bool     `json:"landlock,omitempty"`
	Seccomp   bool     `json:"seccomp,omitempty"`
	Cgroups   []string `json:"cgroups,omitempty"` // cgroup.procs files to join
	Memory    int64    `json:"memory,omitempty"`
	CPU       int64    `json:"cpu,omitempty"` // seconds
	Processes int      `json:"processes,omitempty"`
	Dir       string   `json:"dir,omitempty"`
	Path      string   `json:"path"`
}

func wrap(c Config, cmd *exec.Cmd) (func(), error) {
	noop := func() {}
	if c.Profile == Hardened {
		return hardened(c, cmd)
	}
	path := cmd.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return noop, err
		}
		path = lp
	}
	s := spec{Path: path, Dir: cmd.Dir, Memory: c.Limits.Memory, Processes: c.Limits.Processes}
	if c.Limits.CPU > 0 {
		s.CPU = int64((c.Limits.CPU + 999_999_999) / 1_000_000_000)
	}
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	cleanup := noop
	if c.Profile == Standard {
		if c.Workspace == "" {
			return noop, fmt.Errorf("sandbox: the %s profile needs a workspace", c.Profile)
		}
		ws, err := filepath.EvalSymlinks(c.Workspace)
		if err != nil {
			return noop, fmt.Errorf("sandbox: workspace: %w", err)
		}
		s.NewRoot, s.Landlock, s.Seccomp = true, true, true
		s.Workspace, s.Network = ws, c.Perms.Network
		s.Read, s.Write = existing(c.Perms.Read), existing(c.Perms.Write)
		if s.Dir == "" {
			s.Dir = ws
		}
		if s.Hide, err = c.hidden(ws); err != nil {
			return noop, err
		}
		if !seccompSupported {
			return noop, fmt.Errorf("sandbox: %w: no seccomp filter for this architecture", ErrUnavailable)
		}
		attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS
		if !c.Perms.Network {
			attr.Cloneflags |= syscall.CLONE_NEWNET
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		// The init is PID 1 of its namespace: when it is gone, the kernel
		// kills everything left in the namespace. Pdeathsig ties the init to
		// the thread that started it, should lathe die first.
		attr.Pdeathsig = syscall.SIGKILL
		var procs []string
		procs, cleanup = newCgroup(c.Limits)
		s.Cgroups = procs
		// PID 1 ignores signals it has no handler for, so a polite SIGTERM
		// would only delay the end; the whole namespace goes with SIGKILL.
		if cmd.Cancel != nil {
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
		}
	}
	js, err := json.Marshal(s)
	if err != nil {
		cleanup()
		return noop, err
	}
	cmd.SysProcAttr = attr
	cmd.Args = append([]string{initArg0, string(js)}, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	// The init changes directory itself, once its root is in place.
	cmd.Dir = ""
	return cleanup, nil
}

// existing returns the absolute, link-free forms of the paths that exist.
func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if a, err := filepath.Abs(r); err == nil {
				out = append(out, a)
			}
		}
	}
	return out
}

// hidden returns the directories of c.Hide as real paths, relative ones
// taken from the workspace ws. Each is created if it is missing, so that a
// sandboxed command cannot plant one of its own where it would be hidden.
func (c Config) hidden(ws string) ([]string, error) {
	var hide []string
	for _, h := range c.Hide {
		if !filepath.IsAbs(h) {
			h = filepath.Join(ws, h)
		}
		if err := os.MkdirAll(h, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: hiding %s: %w", h, err)
		}
		real, err := filepath.EvalSymlinks(h)
		if err != nil {
			return nil, fmt.Errorf("sandbox: hiding %s: %w", h, err)
		}
		hide = append(hide, real)
	}
	return hide, nil
}

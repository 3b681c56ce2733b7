package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/lathe-tools/lathe/internal/statedir"
	"github.com/lathe-tools/lathe/protect"
)

// initArg0 is the argv[0] by which the re-executed binary knows it is to
// act as the sandbox's init (init_linux.c).
const initArg0 = "lathe-sandbox-init"

// unshareFlags are the namespaces each standard run gets of its own, inside
// its template's user namespace.
const unshareFlags = syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

func wrap(c Config, cmd *exec.Cmd) (func(), error) {
	noop := func() {}
	unsupervise(cmd)
	if c.Profile == Hardened {
		return hardened(c, cmd)
	}
	if c.Profile == Standard && c.Workspace == "" && !c.NoWorkspace {
		return noop, fmt.Errorf("sandbox: the %s profile needs a workspace", c.Profile)
	}
	if !haveInit {
		return noop, fmt.Errorf("sandbox: %w: the %s profile needs lathe built with cgo (its init is C)", ErrUnavailable, c.Profile)
	}
	path := cmd.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return noop, err
		}
		path = lp
	}
	attr := ownSession(cmd)
	line, err := lifeline()
	if err != nil {
		return noop, fmt.Errorf("sandbox: %w", err)
	}
	args := []string{initArg0, "lathe", strconv.Itoa(3 + len(cmd.ExtraFiles))}
	cmd.ExtraFiles = append(cmd.ExtraFiles, line)
	cleanup := noop
	pidsGroup := false // whether a pids cgroup bounds the run
	if c.Profile == Dev {
		// A dev run is a host process: the init forks it and supervises
		// it, so that whatever it starts ends with it, or with lathe.
		args = append(args, "fork", "1")
	}
	if c.Profile == Standard {
		if !seccompSupported {
			return noop, fmt.Errorf("sandbox: %w: no seccomp filter for this architecture", ErrUnavailable)
		}
		sh := shape{Network: c.Perms.Network, Read: existing(c.Perms.Read), Write: existing(c.Perms.Write)}
		// Without a workspace there is nothing of lathe's in the root to
		// hide or to keep read-only, and the run's working directory is
		// its own /tmp.
		ws := "/tmp"
		if !c.NoWorkspace {
			var err error
			if ws, err = filepath.EvalSymlinks(c.Workspace); err != nil {
				return noop, fmt.Errorf("sandbox: workspace: %w", err)
			}
			sh.Workspace, sh.ReadOnly = ws, readOnly(ws)
			if sh.Hide, err = c.hidden(ws); err != nil {
				return noop, err
			}
		}
		t, err := acquire(sh)
		if err != nil {
			return noop, err
		}
		cg, removeCgroups := newCgroup(c.Limits)
		pidsGroup = cg != nil && cg.pids
		kills := cg.oomKills()
		cleanup = func() {
			reportOOM(cmd, cg, kills, c.Limits.Memory)
			removeCgroups()
			t.release()
		}
		args = append(args, cg.enter(attr)...)
		for i := range t.ns {
			args = append(args, "setns", strconv.Itoa(3+len(cmd.ExtraFiles)+i))
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, t.ns...)
		dir := cmd.Dir
		if dir == "" {
			dir = ws
		}
		args = append(args, "unshare", strconv.Itoa(unshareFlags), "proc", "/proc")
		// The run's own /tmp covers what the template put under /tmp;
		// the init moves copies of those mounts back on top of it.
		under := underTmp(sh)
		for _, p := range under {
			args = append(args, "keep", p)
		}
		args = append(args, "tmpfs", "/tmp")
		for _, p := range under {
			args = append(args, "rebind", p)
		}
		args = append(args, "dir", dir, "dropcaps", "1")
		args = append(args, t.static...)
		// The init changes directory itself, once its root is in place.
		cmd.Dir = ""
		// PID 1 ignores signals it has no handler for, so a polite SIGTERM
		// would only delay the end; the whole namespace goes with SIGKILL.
		if cmd.Cancel != nil {
			cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
		}
	}
	args = append(args, rlimitArgs(c.Limits, pidsGroup)...)
	args = append(args, "path", path, "--")
	cmd.SysProcAttr = attr
	cmd.Args = append(args, cmd.Args...)
	cmd.Path = "/proc/self/exe"
	return cleanup, nil
}

// underTmp returns the paths of s at or under /tmp that no other such path
// contains.
func underTmp(s shape) []string {
	var all []string
	for _, group := range [][]string{{s.Workspace}, s.Read, s.Write, s.ReadOnly, s.Hide} {
		for _, p := range group {
			if within(p, "/tmp") {
				all = append(all, p)
			}
		}
	}
	var out []string
	for _, p := range all {
		inner := false
		for _, q := range all {
			if q != p && within(p, q) {
				inner = true
				break
			}
		}
		if !inner && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether path p is dir or inside it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// staticArgs are the init's steps that every run of a template shares.
func staticArgs(s shape) []string {
	return append(landlockArgs(s), "seccomp", seccompArg(s.Network))
}

// rlimitArgs are the init's limits, the address-space limit last: from
// there on the init may not be able to map another page. pidsGroup says
// whether a pids cgroup bounds the run's processes.
func rlimitArgs(l Limits, pidsGroup bool) []string {
	var args []string
	set := func(res int, v uint64) {
		args = append(args, "rlimit", strconv.Itoa(res)+" "+strconv.FormatUint(v, 10))
	}
	if l.Processes > 0 && !pidsGroup {
		// RLIMIT_NPROC counts every process and thread of the user in
		// the user namespace, not of the run: under standard, every run
		// of the same template, under dev every process of the user on
		// the host. A Go tool of a few dozen threads then failed to start
		// one (pthread_create EAGAIN) while other runs were going, though
		// it was far within its own limit. The pids cgroup counts the run
		// alone, so where there is one it is the only bound; where there
		// is none, the rlimit is, shared as it is. (It never binds the
		// host's root, which runs in the template's namespace too.)
		set(unix.RLIMIT_NPROC, uint64(l.Processes))
	}
	if l.CPU > 0 {
		set(unix.RLIMIT_CPU, uint64((l.CPU+time.Second-1)/time.Second))
	}
	set(unix.RLIMIT_CORE, 0)
	if l.FileSize > 0 {
		set(unix.RLIMIT_FSIZE, uint64(l.FileSize))
	}
	if l.Memory > 0 {
		set(unix.RLIMIT_AS, addressSpace(l.Memory))
	}
	return args
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

// hidden returns the directories of c.Hide and lathe's state directories
// as real paths, relative ones taken from the workspace ws. Each is created
// if it is missing, so that a sandboxed command cannot plant one of its own
// where it would be hidden. lathe's per-user directories (protect.UserDirs:
// the user's configuration, trust records, grants) are among them where
// they lie in the workspace, as they do in a workspace that is the home
// directory.
func (c Config) hidden(ws string) ([]string, error) {
	hide := []string{}
	names := append([]string{protect.StateDir}, c.Hide...)
	for _, d := range protect.UserDirs() {
		if in, err := statedir.Inside(d, ws); err == nil && in {
			names = append(names, d)
		}
	}
	for _, h := range names {
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
		if !slices.Contains(hide, real) {
			hide = append(hide, real)
		}
	}
	return hide, nil
}

// readOnly returns the workspace's configuration files that exist as
// regular files, as paths in the workspace ws. A link is left out: a
// mount cannot cover a symbolic link, only what it points to, which may
// be anywhere; such a file is guarded by the trust check alone.
func readOnly(ws string) []string {
	var out []string
	for _, name := range []string{protect.ConfigFile} {
		p := filepath.Join(ws, name)
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
			out = append(out, p)
		}
	}
	return out
}

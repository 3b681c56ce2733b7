// Package sandbox runs a tool's process under an isolation profile.
//
// A [Config] names a [Profile], the [Limits] of one run and the
// [Permissions] of the process. [Config.Wrap] rewrites an [exec.Cmd] so that
// the operating system enforces them:
//
//	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: root}
//	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
//	cleanup, err := cfg.Wrap(cmd)
//	if err != nil {
//		return err
//	}
//	defer cleanup()
//	err = cmd.Run()
//
// Under [Dev] the command runs as a host process with rlimits only. Under
// [Standard] it runs in new user, mount, network and PID namespaces, in a
// root file system that holds only the system directories (read-only), the
// workspace (read-write) and the listed paths, with Landlock file and TCP
// rules, a seccomp deny-list, cgroup limits where the machine lets lathe
// create cgroups, and rlimits. [Hardened] needs gVisor's runsc and fails
// with [ErrUnavailable] where it is missing; it never falls back to a weaker
// profile.
//
// The set-up is done by a small init written in C: Wrap makes the command
// re-execute the current binary under a name the init recognises, and the
// init, a constructor that runs before Go's runtime starts, builds the
// sandbox and executes the real program. Any binary that imports this
// package and is built with cgo, a test binary included, can therefore
// sandbox commands; without cgo only [Hardened] is available. Under
// [Standard] each run joins namespaces that lathe builds once per shape of
// sandbox (the same workspace, paths and network) and gets new mount, PID,
// IPC and UTS namespaces of its own. The project's docs/design/sandbox.md
// explains the choices.
package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"time"

	"github.com/lathe-tools/lathe/internal/childenv"
)

// Profile is an isolation level.
type Profile string

// The profiles.
const (
	// Dev runs the command as a host process with rlimits only.
	Dev Profile = "dev"
	// Standard adds namespaces, a private root file system, Landlock,
	// seccomp and cgroups.
	Standard Profile = "standard"
	// Hardened runs the command under gVisor; it needs runsc.
	Hardened Profile = "hardened"
)

// ErrUnavailable is returned, wrapped, when a profile cannot be provided on
// this machine. A profile is never silently replaced by a weaker one.
var ErrUnavailable = errors.New("sandbox profile unavailable")

// ParseProfile returns the profile named s; "" means [Standard].
func ParseProfile(s string) (Profile, error) {
	switch Profile(s) {
	case "":
		return Standard, nil
	case Dev, Standard, Hardened:
		return Profile(s), nil
	}
	return "", fmt.Errorf("unknown sandbox profile %q (want dev, standard or hardened)", s)
}

// Limits bound one run. A zero field means the default of [DefaultLimits];
// a negative one means no limit.
type Limits struct {
	// Wall is the longest a run may take; the caller enforces it with the
	// command's context.
	Wall time.Duration `toml:"wall_time"`
	// Memory caps the memory of the whole run, in bytes, with the memory
	// cgroup where lathe can create one. Each process's address space
	// (RLIMIT_AS) is capped too, at Memory and a reserve for what runtimes
	// reserve and never touch: 2 GiB and 512 MiB per CPU more. That is
	// the only bound where there is no cgroup (under [Dev], say), and a
	// looser backstop where there is one.
	Memory int64 `toml:"memory"`
	// CPU caps the processor time of each process (RLIMIT_CPU).
	CPU time.Duration `toml:"cpu_time"`
	// Processes caps the number of processes of the run (cgroup pids, and
	// RLIMIT_NPROC where it applies).
	Processes int `toml:"processes"`
	// Output caps the bytes the caller keeps of standard output; the caller
	// enforces it.
	Output int `toml:"output_bytes"`
	// CPUs caps the processor share of the whole run, in CPUs (1.5 is one
	// and a half), with the cpu cgroup controller where lathe can create
	// cgroups. Zero or less means no cap: a run may use every CPU.
	CPUs float64 `toml:"cpus"`
	// FileSize caps the size of each file a process of the run writes, in
	// bytes (RLIMIT_FSIZE): a write past it fails, and the process gets
	// SIGXFSZ, so that a run cannot fill the disk with one file.
	FileSize int64 `toml:"file_size"`
}

// DefaultLimits returns the limits of a zero [Limits]. They are a
// function's result, not a variable, so that no package a program imports
// can raise them for every sandbox of the program.
func DefaultLimits() Limits { return defaultLimits }

var defaultLimits = Limits{
	Wall:      2 * time.Minute,
	Memory:    1 << 30,
	CPU:       time.Minute,
	Processes: 256,
	Output:    1 << 20,
	FileSize:  1 << 30,
}

// addressReserve returns the address space a process under a memory
// limit may have beyond the limit itself. Runtimes reserve address space
// they never touch, and RLIMIT_AS counts it as if it were memory: Go
// reserves about a GiB at start for its heap's index (less when the limit
// is low, as it then falls back to smaller reservations), each thread of a
// program linked with the C library gets a stack of RLIMIT_STACK (8 MiB by
// default), and glibc's malloc gives a thread an arena of its own, 64 MiB
// of address space each, up to eight per CPU. A Go tool under an address
// space of just its memory limit of 1 GiB had a few hundred MiB left for
// its threads, and failed to start one ("pthread_create failed: Resource
// temporarily unavailable") or aborted out of memory, at random, with
// most of its memory untouched. The reserve is 2 GiB, for the runtime and
// the threads' stacks, and 512 MiB per CPU, for glibc's arenas.
//
// Where lathe can create a memory cgroup for the run, the cgroup bounds
// the memory the run uses to [Limits.Memory] exactly; where it cannot, the
// address space is the only bound, and a process may use up to the limit
// and this reserve.
func addressReserve() int64 {
	return 2<<30 + int64(runtime.NumCPU())*512<<20
}

// addressSpace is the RLIMIT_AS of each process of a run whose memory is
// limited to memory bytes.
func addressSpace(memory int64) uint64 {
	return uint64(memory) + uint64(addressReserve())
}

// WithDefaults returns l with its zero fields set from [DefaultLimits].
func (l Limits) WithDefaults() Limits {
	d := defaultLimits
	if l.Wall == 0 {
		l.Wall = d.Wall
	}
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPU == 0 {
		l.CPU = d.CPU
	}
	if l.Processes == 0 {
		l.Processes = d.Processes
	}
	if l.Output == 0 {
		l.Output = d.Output
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	return l
}

// Permissions say what the process may reach besides the workspace, which
// is always readable and writable, and the system directories
// ([SystemPaths]), which are readable.
type Permissions struct {
	// Read lists further paths the process may read.
	Read []string `toml:"read"`
	// Write lists further paths the process may read and write.
	Write []string `toml:"write"`
	// Network lets the process use the host's network. Under [Standard]
	// and [Hardened] it is off by default: the process gets a network
	// namespace of its own with no interface up, and Landlock denies TCP.
	Network bool `toml:"network"`
	// Env names the variables that pass from lathe's environment, besides
	// PATH, LANG and TERM. TMPDIR is /tmp, and HOME a directory of the
	// run's own, never the workspace.
	Env []string `toml:"env"`
}

// SystemPaths returns the directories (and files) every sandboxed process
// may read and execute. Only a few files of /etc are exposed, so that
// secrets kept there (/etc/shadow, keys) stay invisible. The result is a
// copy: changing it changes nothing of what a sandbox exposes, so no
// package a program imports can widen every sandbox of the program.
func SystemPaths() []string { return slices.Clone(systemPaths) }

var systemPaths = []string{
	"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/resolv.conf",
	"/etc/localtime", "/etc/ssl/certs", "/etc/ca-certificates", "/etc/mime.types",
}

// Config is the sandbox of one command.
type Config struct {
	// Profile is the isolation level; "" means [Standard].
	Profile Profile
	// Workspace is the directory the process may read and write, and its
	// working directory unless the command sets one inside it. Required
	// for [Standard] and [Hardened].
	Workspace string
	Limits    Limits
	Perms     Permissions
	// Hide lists directories inside the workspace that the process must
	// neither see nor change. Under [Standard] and [Hardened] each is
	// covered by an empty read-only file system; one that does not exist
	// is created first, so that the process cannot plant it either.
	// lathe's own state directory, .lathe, is always hidden, and the
	// workspace's lathe.toml, where it exists, is always read-only.
	Hide []string
	// NoWorkspace gives the process no workspace at all: under [Standard]
	// and [Hardened] Workspace (which may then be empty) is not mounted,
	// and the working directory, unless the command sets one, is the run's
	// own empty /tmp, which ends with the run. It is for a process that
	// reaches the workspace only by asking lathe (a VFS tool). [Dev]
	// cannot withhold anything from a host process: Wrap refuses it.
	NoWorkspace bool
}

// What a run may not change is protect's list: under [Standard] and
// [Hardened] the workspace's configuration file, where it exists, is bound
// read-only over itself (readOnly), and lathe's state directory and its
// per-user directories that lie in the workspace are hidden (hidden).

// Env returns the environment of a sandboxed process: lathe's one rule for
// children (PATH, LANG, TERM and the names of [Permissions].Env, from
// lathe's own environment), with TMPDIR set to /tmp, since the host's is
// not inside the sandbox. Nothing else passes. [Config.Wrap] sets HOME.
func (c Config) Env() []string {
	return childenv.Set(childenv.Build(c.Perms.Env, nil), "TMPDIR", "/tmp")
}

// privateHome returns the HOME of one run under profile p, and what
// removes it. A run's HOME is never the workspace: programs write their
// caches and settings there (Go's build cache, npm's), which would land in
// the repository and carry from one run to the next. Under [Standard] and
// [Hardened] it is the run's own /tmp, a fresh file system that ends with
// the run; under [Dev] a new directory, readable by lathe's user only,
// removed after the run.
func privateHome(p Profile) (string, func(), error) {
	if p != Dev {
		return "/tmp", func() {}, nil
	}
	dir, err := os.MkdirTemp("", "lathe-home-")
	if err != nil {
		return "", func() {}, fmt.Errorf("sandbox: a private HOME: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Wrap rewrites cmd, not yet started, to run under c. cmd.Path and
// cmd.Args name the real program; cmd.Env should come from [Config.Env]
// (Wrap drops every variable whose name is not allowed, sets TMPDIR, and
// sets HOME to a directory of the run's own: see privateHome). The returned
// cleanup, never nil, must be called once cmd has been waited for.
//
// Wrap sets cmd.SysProcAttr; a Setpgid already set is kept.
func (c Config) Wrap(cmd *exec.Cmd) (cleanup func(), err error) {
	p, err := ParseProfile(string(c.Profile))
	if err != nil {
		return func() {}, err
	}
	c.Profile = p
	if c.NoWorkspace {
		if p == Dev {
			return func() {}, fmt.Errorf("sandbox: the %s profile runs a host process, which sees every file of lathe's user; it cannot withhold the workspace (use standard or hardened)", p)
		}
		c.Workspace, c.Hide = "", nil
	}
	c.Limits = c.Limits.WithDefaults()
	home, removeHome, err := privateHome(p)
	if err != nil {
		return removeHome, err
	}
	cmd.Env = childenv.Set(childenv.Filter(cmd.Env, c.Perms.Env), "TMPDIR", "/tmp")
	cmd.Env = childenv.Set(cmd.Env, "HOME", home)
	undo, err := wrap(c, cmd)
	return func() {
		undo()
		removeHome()
	}, err
}

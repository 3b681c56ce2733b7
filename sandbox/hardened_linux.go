package sandbox

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The hardened profile runs the command on gVisor: lathe writes an OCI
// bundle for the run into a private directory and rewrites the command to
//
//	runsc --root DIR/state --network=none run --bundle DIR/bundle ID
//
// runsc's state lives in the run's own directory, so that runs never see
// each other and cleanup removes everything (runsc delete, then the
// directory).

// ociSpec is the part of the OCI runtime specification lathe writes.
type ociSpec struct {
	Version  string     `json:"ociVersion"`
	Process  ociProcess `json:"process"`
	Root     ociRoot    `json:"root"`
	Hostname string     `json:"hostname"`
	Mounts   []ociMount `json:"mounts"`
	Linux    ociLinux   `json:"linux"`
}

type ociProcess struct {
	Terminal        bool                `json:"terminal"`
	User            ociUser             `json:"user"`
	Args            []string            `json:"args"`
	Env             []string            `json:"env"`
	Cwd             string              `json:"cwd"`
	Capabilities    map[string][]string `json:"capabilities"`
	Rlimits         []ociRlimit         `json:"rlimits,omitempty"`
	NoNewPrivileges bool                `json:"noNewPrivileges"`
}

type ociUser struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

type ociRlimit struct {
	Type string `json:"type"`
	Hard uint64 `json:"hard"`
	Soft uint64 `json:"soft"`
}

type ociRoot struct {
	Path     string `json:"path"`
	Readonly bool   `json:"readonly"`
}

type ociMount struct {
	Destination string   `json:"destination"`
	Type        string   `json:"type"`
	Source      string   `json:"source"`
	Options     []string `json:"options,omitempty"`
}

type ociLinux struct {
	Namespaces  []ociNamespace `json:"namespaces"`
	Resources   *ociResources  `json:"resources,omitempty"`
	CgroupsPath string         `json:"cgroupsPath,omitempty"`
}

type ociNamespace struct {
	Type string `json:"type"`
}

type ociResources struct {
	Memory *struct {
		Limit int64 `json:"limit"`
	} `json:"memory,omitempty"`
}

// hardened rewrites cmd to run under runsc. Where runsc is missing it
// fails with ErrUnavailable: the profile is never weakened.
func hardened(c Config, cmd *exec.Cmd) (func(), error) {
	noop := func() {}
	runsc, err := exec.LookPath("runsc")
	if err != nil {
		return noop, fmt.Errorf("sandbox: %w: the hardened profile needs gVisor's runsc, which is not installed (use the standard profile, or install runsc)", ErrUnavailable)
	}
	if c.Workspace == "" && !c.NoWorkspace {
		return noop, fmt.Errorf("sandbox: the %s profile needs a workspace", c.Profile)
	}
	// Without a workspace (NoWorkspace) ws stays empty: nothing is bound
	// for it, nothing hidden, and the run works in its own /tmp.
	ws := ""
	if !c.NoWorkspace {
		if ws, err = filepath.EvalSymlinks(c.Workspace); err != nil {
			return noop, fmt.Errorf("sandbox: workspace: %w", err)
		}
		if ws, err = filepath.Abs(ws); err != nil {
			return noop, fmt.Errorf("sandbox: workspace: %w", err)
		}
	}
	path := cmd.Path
	if filepath.Base(path) == path {
		if path, err = exec.LookPath(path); err != nil {
			return noop, err
		}
	}
	dir := cmd.Dir
	if dir == "" {
		dir = cmp.Or(ws, "/tmp")
	}
	var hide []string
	if ws != "" {
		if hide, err = c.hidden(ws); err != nil {
			return noop, err
		}
	}

	root, err := os.MkdirTemp("", "lathe-runsc-")
	if err != nil {
		return noop, fmt.Errorf("sandbox: %w", err)
	}
	bundle, state := filepath.Join(root, "bundle"), filepath.Join(root, "state")
	for _, d := range []string{filepath.Join(bundle, "rootfs"), state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			os.RemoveAll(root)
			return noop, fmt.Errorf("sandbox: %w", err)
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	id := "lathe-" + hex.EncodeToString(rnd[:])

	spec := hardenedSpec(c, ws, dir, hide, append([]string{path}, cmd.Args[1:]...), cmd.Env)
	cgroups, cgroupsPath := os.Geteuid() == 0, id
	if cgroups && cgroupV2() {
		// runsc makes the run's group and enables controllers in its
		// parent, which a v2 parent holding processes refuses: the group
		// goes where lathe makes the standard runs' groups, a parent it
		// has left (v2Parent), or nowhere.
		parent, _ := v2Parent()
		cgroups = parent != ""
		cgroupsPath = filepath.Join(strings.TrimPrefix(parent, cgroupRoot), id)
	}
	if cgroups {
		// runsc creates the run's cgroup and sizes the sandbox from it.
		// No pids limit: the tool's processes are not host tasks under
		// gVisor, the sentry's threads are, and they are not the tool's.
		res := &ociResources{}
		if c.Limits.Memory > 0 {
			res.Memory = &struct {
				Limit int64 `json:"limit"`
			}{c.Limits.Memory}
		}
		spec.Linux.Resources, spec.Linux.CgroupsPath = res, cgroupsPath
	}
	js, err := json.MarshalIndent(spec, "", "\t")
	if err == nil {
		err = os.WriteFile(filepath.Join(bundle, "config.json"), js, 0o600)
	}
	if err != nil {
		os.RemoveAll(root)
		return noop, fmt.Errorf("sandbox: writing the OCI bundle: %w", err)
	}

	global := []string{"--root", state}
	if c.Perms.Network {
		global = append(global, "--network=host")
	} else {
		global = append(global, "--network=none")
	}
	if !cgroups {
		global = append(global, "--rootless", "--ignore-cgroups")
	}
	// destroy kills whatever runs in the sandbox and removes the
	// container; it is safe to call more than once.
	destroy := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		exec.CommandContext(ctx, runsc, append(append([]string{}, global...), "kill", "--all", id, "KILL")...).Run()
		exec.CommandContext(ctx, runsc, append(append([]string{}, global...), "delete", "--force", id)...).Run()
	}
	cmd.Path = runsc
	cmd.Args = append(append([]string{"runsc"}, global...), "run", "--bundle", bundle, id)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.Dir = bundle
	// runsc, and the sandbox it keeps attached, go when lathe does; in a
	// session of their own, without lathe's terminal.
	Supervise(cmd)
	if cmd.Cancel != nil {
		// runsc run would pass a signal on to the tool only; the
		// sandbox itself goes, then runsc.
		cmd.Cancel = func() error {
			destroy()
			return cmd.Process.Kill()
		}
	}
	return func() {
		destroy()
		os.RemoveAll(root)
	}, nil
}

// hardenedSpec is the OCI configuration of one run: an empty read-only
// root with the system and read paths bound read-only, the workspace and
// the write paths read-write at their host paths, a private /tmp, and the
// hidden directories covered by empty read-only file systems.
func hardenedSpec(c Config, ws, dir string, hide, args, env []string) ociSpec {
	s := ociSpec{
		Version:  "1.0.2",
		Hostname: "lathe",
		Root:     ociRoot{Path: "rootfs", Readonly: true},
		Process: ociProcess{
			// Root of the sandbox, with no capabilities: under --rootless
			// it is lathe's user, and otherwise files it creates in the
			// workspace belong to lathe's user (root) as well.
			User: ociUser{UID: 0, GID: 0},
			Args: args, Env: env, Cwd: dir, NoNewPrivileges: true,
			Capabilities: map[string][]string{
				"bounding": {}, "effective": {}, "inheritable": {}, "permitted": {}, "ambient": {},
			},
			Rlimits: []ociRlimit{{Type: "RLIMIT_CORE"}},
		},
		Mounts: []ociMount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "noexec", "mode=755"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		},
		Linux: ociLinux{Namespaces: []ociNamespace{{"pid"}, {"ipc"}, {"uts"}, {"mount"}}},
	}
	if !c.Perms.Network {
		s.Linux.Namespaces = append(s.Linux.Namespaces, ociNamespace{"network"})
	}
	l := c.Limits
	limit := func(kind string, n uint64) {
		s.Process.Rlimits = append(s.Process.Rlimits, ociRlimit{Type: kind, Hard: n, Soft: n})
	}
	if l.Memory > 0 {
		limit("RLIMIT_AS", addressSpace(l.Memory))
	}
	if l.CPU > 0 {
		limit("RLIMIT_CPU", uint64((l.CPU+time.Second-1)/time.Second))
	}
	if l.Processes > 0 {
		limit("RLIMIT_NPROC", uint64(l.Processes))
	}
	if l.FileSize > 0 {
		limit("RLIMIT_FSIZE", uint64(l.FileSize))
	}

	type bind struct {
		src, dst string
		rw       bool
	}
	// A system path given as a link (/bin on merged-/usr systems) is
	// mounted at its own name with the link's target as the source.
	var binds []bind
	for _, p := range systemPaths {
		if r := existing([]string{p}); r != nil {
			binds = append(binds, bind{r[0], p, false})
		}
	}
	for _, p := range existing(c.Perms.Read) {
		binds = append(binds, bind{p, p, false})
	}
	for _, p := range existing(c.Perms.Write) {
		binds = append(binds, bind{p, p, true})
	}
	if ws != "" {
		binds = append(binds, bind{ws, ws, true})
		// The workspace's configuration, read-only over the workspace.
		for _, p := range readOnly(ws) {
			binds = append(binds, bind{p, p, false})
		}
	}
	// Parents before children, so that a path inside another one is
	// mounted on top of it; at equal depth a later (more permissive)
	// entry wins.
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(binds[i].dst, "/") < strings.Count(binds[j].dst, "/")
	})
	for _, b := range binds {
		opt := []string{"rbind", "ro", "nosuid", "nodev"}
		if b.rw {
			opt[1] = "rw"
		}
		s.Mounts = append(s.Mounts, ociMount{Destination: b.dst, Type: "bind", Source: b.src, Options: opt})
	}
	for _, h := range hide {
		s.Mounts = append(s.Mounts, ociMount{Destination: h, Type: "tmpfs", Source: "tmpfs",
			Options: []string{"ro", "nosuid", "nodev", "noexec", "size=4k"}})
	}
	return s
}

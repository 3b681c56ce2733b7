package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// shape is what the runs of one template have in common: the file system
// they see and whether they have the network. The init's per-run steps
// (cgroups, limits, the program) are not part of it.
type shape struct {
	Workspace string   `json:"workspace"`
	Read      []string `json:"read,omitempty"`
	Write     []string `json:"write,omitempty"`
	Hide      []string `json:"hide,omitempty"`
	// ReadOnly are files in the workspace bound read-only over
	// themselves: its configuration.
	ReadOnly []string `json:"readonly,omitempty"`
	Network  bool     `json:"network,omitempty"`
}

// A template holds the namespaces every standard run of one shape joins:
// a user namespace, a mount namespace whose root is already built, and,
// with the network off, an empty network namespace. Creating those costs
// milliseconds (the network namespace alone about 1 ms here); joining them
// costs microseconds. Each run still gets new mount, PID, IPC and UTS
// namespaces of its own (copies of the template's mount namespace, with a
// private /tmp and /proc), so runs cannot see one another's files in /tmp,
// processes, or System V objects.
//
// The template's namespaces are held by open descriptors, so they outlive
// the process that built them.
type template struct {
	shape shape
	ns    []*os.File // user first, then mount, then network
	// static are the init's arguments that are the same for every run:
	// Landlock rules and the seccomp program.
	static []string
	// stamps identify the paths bound into the root; a path replaced on
	// the host (a workspace removed and made again, a new resolv.conf
	// renamed into place) makes the template stale, since its mount still
	// shows the old one.
	stamps []stamp

	ready chan struct{} // closed once built
	err   error

	mu    sync.Mutex
	users int
	stale bool // no longer in the cache; closed when users drops to 0
}

// A stamp identifies a file by device, inode and birth time. The inode
// number alone is not enough: a file or directory removed and made again
// (lathe's state directory, the configuration rewritten) often gets the
// number its predecessor freed, while the template's mount over the old one
// was dropped when it was removed, so a run would see the new one unhidden
// or writable. The birth time tells them apart where the file system keeps
// one.
type stamp struct {
	path     string
	dev, ino uint64
	born     unix.StatxTimestamp
}

func stampOf(p string) stamp {
	var st unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_INO|unix.STATX_BTIME, &st) != nil {
		return stamp{path: p}
	}
	s := stamp{path: p, dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino}
	if st.Mask&unix.STATX_BTIME != 0 {
		s.born = st.Btime
	}
	return s
}

func stampsOf(s shape) []stamp {
	var out []stamp
	for _, group := range [][]string{{s.Workspace}, s.Read, s.Write, s.ReadOnly, s.Hide, systemFiles()} {
		if len(group) == 1 && group[0] == "" {
			continue // no workspace
		}
		for _, p := range group {
			out = append(out, stampOf(p))
		}
	}
	return out
}

// systemFiles are the system paths that are files, such as
// /etc/resolv.conf and /etc/ld.so.cache: programs replace them by renaming
// a new file over the old one, which a template's mount would not follow.
var systemFiles = sync.OnceValue(func() []string {
	var files []string
	for _, p := range systemPaths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			files = append(files, p)
		}
	}
	return files
})

func (t *template) current() bool {
	for _, s := range t.stamps {
		if stampOf(s.path) != s {
			return false
		}
	}
	return true
}

// release ends one run's use of t.
func (t *template) release() {
	t.mu.Lock()
	t.users--
	last := t.users == 0 && t.stale
	t.mu.Unlock()
	if last {
		t.close()
	}
}

func (t *template) close() {
	for _, f := range t.ns {
		f.Close()
	}
}

// maxTemplates bounds the cache; the least recently used template goes
// first. A process that sandboxes commands in many workspaces keeps at
// most this many sets of namespaces.
const maxTemplates = 32

var templates struct {
	sync.Mutex
	m     map[string]*template
	order []string // least recently used first
}

// acquire returns the template of s, building it if needed, for one run;
// the run calls release when it is done.
func acquire(s shape) (*template, error) {
	key, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	k := string(key)
	templates.Lock()
	if templates.m == nil {
		templates.m = map[string]*template{}
	}
	t := templates.m[k]
	if t != nil {
		select {
		case <-t.ready:
			if t.err == nil && !t.current() {
				evict(k)
				t = nil
			}
		default:
		}
	}
	build := t == nil
	if build {
		t = &template{shape: s, ready: make(chan struct{})}
		templates.m[k] = t
		for len(templates.order) >= maxTemplates {
			evict(templates.order[0])
		}
	}
	touch(k)
	t.mu.Lock()
	t.users++
	t.mu.Unlock()
	templates.Unlock()

	if build {
		t.err = t.build()
		close(t.ready)
		if t.err != nil {
			templates.Lock()
			if templates.m[k] == t {
				evict(k)
			}
			templates.Unlock()
		}
	}
	<-t.ready
	if t.err != nil {
		t.release()
		return nil, t.err
	}
	return t, nil
}

// evict removes the template of key k from the cache; it is closed once
// its last run releases it. templates must be locked.
func evict(k string) {
	t := templates.m[k]
	delete(templates.m, k)
	for i, o := range templates.order {
		if o == k {
			templates.order = append(templates.order[:i], templates.order[i+1:]...)
			break
		}
	}
	if t == nil {
		return
	}
	t.mu.Lock()
	t.stale = true
	unused := t.users == 0
	t.mu.Unlock()
	if unused {
		t.close()
	}
}

func touch(k string) {
	for i, o := range templates.order {
		if o == k {
			templates.order = append(templates.order[:i], templates.order[i+1:]...)
			break
		}
	}
	templates.order = append(templates.order, k)
}

// templateArg0 is the argv[0] by which the re-executed binary knows it is
// to build a template (init_linux.c).
const templateArg0 = "lathe-sandbox-template"

// build starts the template's builder (init_linux.c) in new user, mount,
// PID and (with the network off) network namespaces, waits for it to build
// the root, and keeps its namespaces.
func (t *template) build() error {
	t.stamps = stampsOf(t.shape)
	args, err := templateArgs(t.shape)
	if err != nil {
		return err
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: args, Env: []string{}}
	flags := uintptr(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID)
	if !t.shape.Network {
		flags |= syscall.CLONE_NEWNET
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 flags,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sandbox: starting the namespaces: %w", err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line == "ok\n" {
		for _, n := range []string{"user", "mnt", "net"} {
			if n == "net" && t.shape.Network {
				break
			}
			f, err := os.Open(fmt.Sprintf("/proc/%d/ns/%s", cmd.Process.Pid, n))
			if err != nil {
				t.close()
				in.Close()
				cmd.Wait()
				return fmt.Errorf("sandbox: keeping the namespaces: %w", err)
			}
			t.ns = append(t.ns, f)
		}
	}
	in.Close()
	werr := cmd.Wait()
	if line != "ok\n" {
		return fmt.Errorf("sandbox: building the root: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	t.static = staticArgs(t.shape)
	return nil
}

// templateArgs returns the builder's steps for s: a root file system of a
// tmpfs holding the system paths (read-only), the workspace and the write
// paths (read-write), the read paths (read-only), an empty /tmp, a minimal
// read-only /dev and a /proc; the hidden directories covered; and the pivot
// into it. The host's tree is then gone from the process's view: what is
// not listed does not exist. Each run mounts its own /tmp and /proc over
// the template's; the template's /proc, of a PID namespace that ends with
// the builder, is what lets a run in a user namespace mount proc at all
// (the kernel wants one fully visible already).
func templateArgs(s shape) ([]string, error) {
	type bind struct {
		path, link string
		rw         bool
	}
	var binds []bind
	add := func(p string, rw bool) {
		fi, err := os.Lstat(p)
		if err != nil {
			return // a system path this machine lacks
		}
		if fi.Mode()&os.ModeSymlink != 0 && !rw && filepath.Dir(p) == "/" {
			if t, err := os.Readlink(p); err == nil {
				binds = append(binds, bind{path: p, link: t})
				return
			}
		}
		binds = append(binds, bind{path: p, rw: rw})
	}
	for _, p := range systemPaths {
		add(p, false)
	}
	for _, p := range s.Read {
		add(p, false)
	}
	for _, p := range s.Write {
		add(p, true)
	}
	if s.Workspace != "" {
		add(s.Workspace, true)
	}
	for _, p := range s.ReadOnly {
		add(p, false)
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"} {
		add(p, true)
	}
	// Shallower paths first, so that a path inside another is mounted on
	// top of it.
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(binds[i].path, "/") < strings.Count(binds[j].path, "/")
	})
	args := []string{templateArg0, "private", "1"}
	// Every path is opened before the new root covers /tmp of this mount
	// namespace, so a workspace under /tmp is still reachable.
	for _, b := range binds {
		if b.link == "" {
			args = append(args, "open", b.path)
		}
	}
	args = append(args, "newroot", "/tmp")
	for _, b := range binds {
		switch {
		case b.link != "":
			args = append(args, "symlink", b.link, "at", b.path)
		case b.rw:
			args = append(args, "bind", "rw:"+b.path)
		default:
			args = append(args, "bind", "ro:"+b.path)
		}
	}
	for _, h := range s.Hide {
		args = append(args, "hide", h)
	}
	return append(args, "dev", "1", "proc", "1", "pivot", "1"), nil
}

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// templateArg0 is the argv[0] by which the re-executed binary knows it is
// to build a sandbox template: the namespaces and the root file system
// that every run of one shape joins (template.go).
const templateArg0 = "lathe-sandbox-template"

// init turns the process into a template's builder when it was started by
// newTemplate; otherwise it does nothing. The builder is PID 1 of a new
// PID namespace, in new user, mount and (with the network off) network
// namespaces. It builds the root, says so on standard output, and waits
// for standard input to close: lathe opens its namespaces in between.
func init() {
	if len(os.Args) != 2 || os.Args[0] != templateArg0 {
		return
	}
	var s shape
	if err := json.Unmarshal([]byte(os.Args[1]), &s); err != nil {
		fail(err)
	}
	if err := buildRoot(&s); err != nil {
		fail(err)
	}
	os.Stdout.WriteString("ok\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "lathe sandbox: %v\n", err)
	os.Exit(126)
}

// bind is one path of the new root, taken from the host.
type bind struct {
	path string
	fd   int // an O_PATH descriptor of the host's file
	rw   bool
	dir  bool
	link string // a symbolic link to recreate instead of mounting
}

// buildRoot makes a new root file system of a tmpfs holding the system
// paths (read-only), the workspace and the write paths (read-write), the
// read paths (read-only), an empty /tmp, a minimal read-only /dev and a
// /proc, and pivots into it. The host's tree is then gone from the
// process's view: what is not listed does not exist. Each run mounts its
// own /tmp and /proc over the template's; the template's /proc, of a PID
// namespace that ends with the builder, is what lets a run in a user
// namespace mount proc at all (the kernel wants one fully visible already).
func buildRoot(s *shape) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	var binds []bind
	add := func(p string, rw bool) error {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil // a system path this machine lacks
		}
		if fi.Mode()&os.ModeSymlink != 0 && !rw && strings.HasPrefix(p, "/") && filepath.Dir(p) == "/" {
			t, err := os.Readlink(p)
			if err == nil {
				binds = append(binds, bind{path: p, link: t, fd: -1})
				return nil
			}
		}
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		binds = append(binds, bind{path: p, fd: fd, rw: rw, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
		return nil
	}
	for _, p := range SystemPaths {
		if err := add(p, false); err != nil {
			return err
		}
	}
	for _, p := range s.Read {
		if err := add(p, false); err != nil {
			return err
		}
	}
	for _, p := range s.Write {
		if err := add(p, true); err != nil {
			return err
		}
	}
	if err := add(s.Workspace, true); err != nil {
		return err
	}
	devs := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}
	for _, p := range devs {
		if err := add(p, true); err != nil {
			return err
		}
	}
	// Shallower paths first, so that a path inside another is mounted on
	// top of it.
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(binds[i].path, "/") < strings.Count(binds[j].path, "/")
	})

	// The new root is a tmpfs mounted over /tmp of this mount namespace;
	// the host's files reach it through the descriptors opened above, so
	// covering /tmp hides nothing that is needed.
	const nr = "/tmp"
	if err := unix.Mount("tmpfs", nr, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("new root: %w", err)
	}
	for _, d := range []string{"tmp", "dev", "proc"} {
		if err := os.Mkdir(filepath.Join(nr, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", nr+"/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	for _, b := range binds {
		t := nr + b.path
		if b.link != "" {
			if err := os.Symlink(b.link, t); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
			return err
		}
		if b.dir {
			if err := os.MkdirAll(t, 0o755); err != nil {
				return err
			}
		} else if f, err := os.OpenFile(t, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			f.Close()
		} else {
			return err
		}
		src := fmt.Sprintf("/proc/self/fd/%d", b.fd)
		if err := unix.Mount(src, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", b.path, err)
		}
		unix.Close(b.fd)
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_NOSUID)
		if !b.rw {
			flags |= unix.MS_RDONLY
		}
		// Flags the host mount carries are locked in a user namespace and
		// must be kept.
		var st unix.Statfs_t
		if unix.Statfs(t, &st) == nil {
			for _, f := range []struct{ st, ms int64 }{
				{unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
				{unix.ST_RDONLY, unix.MS_RDONLY}, {unix.ST_NOATIME, unix.MS_NOATIME},
				{unix.ST_RELATIME, unix.MS_RELATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME},
			} {
				if st.Flags&f.st != 0 {
					flags |= uintptr(f.ms)
				}
			}
		}
		if err := unix.Mount("", t, "", flags, ""); err != nil {
			return fmt.Errorf("remount %s: %w", b.path, err)
		}
	}
	for _, h := range s.Hide {
		if err := unix.Mount("tmpfs", nr+h, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0500"); err != nil {
			return fmt.Errorf("hiding %s: %w", h, err)
		}
	}
	for name, target := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, nr+"/dev/"+name); err != nil {
			return err
		}
	}
	// Runs share the template's /dev: nothing may be created in it.
	if err := unix.Mount("", nr+"/dev", "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("read-only /dev: %w", err)
	}
	if err := unix.Mount("proc", nr+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("/proc: %w", err)
	}
	if err := os.Chdir(nr); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	// The tmpfs root itself becomes read-only: nothing can be created
	// beside the listed paths.
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return fmt.Errorf("read-only root: %w", err)
	}
	return nil
}

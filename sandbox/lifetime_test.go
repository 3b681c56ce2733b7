//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/ptytest"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/runtime/process"
	"github.com/lathe-tools/lathe/sandbox"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools/command"
)

// helperMain lets the test binary play the parts these tests need, chosen
// by argv[1]; it returns when the binary is to run the tests.
//
//	fake-lathe MODE WS SCRIPT   start /bin/sh -c SCRIPT the way lathe starts a
//	                            child in MODE, and wait for it
//	tty-parent MODE WS          run tty-probe that way, with standard input
//	                            and error the terminal this process controls,
//	                            and print what it printed
//	tty-probe                   report what of a terminal this process reaches
func helperMain() {
	if len(os.Args) < 2 {
		return
	}
	switch os.Args[1] {
	case "fake-lathe":
		err := startAs(os.Args[2], os.Args[3], []string{"/bin/sh", "-c", os.Args[4]}, nil, io.Discard, io.Discard)
		fmt.Println("fake lathe:", err)
		os.Exit(0)
	case "tty-parent":
		fmt.Println("parent:", probeTTY())
		exe, _ := os.Executable()
		var out bytes.Buffer
		// The child is told where the terminal is and which process group
		// is its foreground one (this process's), to try to take it back.
		term, _ := os.Readlink("/proc/self/fd/0")
		err := startAs(os.Args[2], os.Args[3], []string{exe, "tty-probe", term, strconv.Itoa(unix.Getpgrp())},
			os.Stdin, &out, os.Stderr)
		fmt.Printf("child: %s (err=%v)\n", strings.TrimSpace(out.String()), err)
		os.Exit(0)
	case "tty-probe":
		pgid, _ := strconv.Atoi(os.Args[3])
		fmt.Println(probeTTY(), retakeTTY(os.Args[2], pgid))
		os.Exit(0)
	}
}

// startAs runs argv in the workspace ws as lathe runs a child in mode:
// "dev", "standard" or "hardened" (Config.Wrap), "process" (a process tool
// without a profile), "run_command" (under the dev profile) or "mcp" (an
// upstream MCP server; it never answers, so its start waits).
func startAs(mode, ws string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx := context.Background()
	exe, _ := os.Executable()
	switch mode {
	case "dev", "standard", "hardened":
		cfg := sandbox.Config{Profile: sandbox.Profile(mode), Workspace: ws,
			Perms:  sandbox.Permissions{Read: []string{filepath.Dir(exe)}},
			Limits: sandbox.Limits{Memory: -1}}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = ws
		cmd.Env = cfg.Env()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
		cleanup, err := cfg.Wrap(cmd)
		defer cleanup()
		if err != nil {
			return err
		}
		return cmd.Run()
	case "process":
		rt, err := process.New(process.Command{Argv: argv, Dir: ws}, process.Options{})
		if err != nil {
			return err
		}
		out, err := rt.Execute(ctx, &tool.Definition{Name: "t"}, &tool.Call{Name: "t", Arguments: json.RawMessage(`{}`)})
		if err == nil && out.Result != nil {
			fmt.Fprint(stdout, out.Result.Text())
		}
		return err
	case "run_command":
		rc, err := command.New(ws, sandbox.Config{Profile: sandbox.Dev, Limits: sandbox.Limits{Memory: -1}})
		if err != nil {
			return err
		}
		line := strings.Join(argv[2:], " ") // the script of /bin/sh -c
		args, _ := json.Marshal(map[string]string{"command": line})
		out, err := rc.Runtime.Execute(ctx, &rc.Definition, &tool.Call{Name: command.Name, Arguments: args})
		if err == nil && out.Result != nil {
			fmt.Fprint(stdout, out.Result.Text())
		}
		return err
	case "mcp":
		e := lathe.New(lathe.Options{})
		defer e.Close()
		_, err := mcp.Open(ctx, e, []mcp.Config{{Name: "s", Command: argv, Dir: ws, StartupTimeout: time.Minute}}, mcp.Options{})
		return err
	}
	return fmt.Errorf("unknown mode %q", mode)
}

// probeTTY reports whether this process can open /dev/tty, which of its
// standard descriptors are terminals, and whether it can push a character
// into the input of any terminal it reaches (TIOCSTI).
func probeTTY() string {
	var parts []string
	fds := []int{}
	if f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
		parts = append(parts, "tty="+errName(err))
	} else {
		defer f.Close()
		parts = append(parts, "tty=opened")
		fds = append(fds, int(f.Fd()))
	}
	for fd := 0; fd < 3; fd++ {
		if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err == nil {
			parts = append(parts, fmt.Sprintf("fd%d=terminal", fd))
			fds = append(fds, fd)
		} else {
			parts = append(parts, fmt.Sprintf("fd%d=not-a-terminal", fd))
		}
	}
	if os.Args[1] == "tty-probe" {
		sti := "no-terminal"
		for _, fd := range fds {
			// A space: harmless should it land in a shell's input.
			c := byte(' ')
			_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSTI, uintptr(unsafe.Pointer(&c)))
			if errno == 0 {
				sti = "injected"
				break
			}
			sti = errno.Error()
		}
		parts = append(parts, "sti="+sti)
	}
	return strings.Join(parts, " ")
}

// retakeTTY tries to make the terminal at path this process's controlling
// terminal: as it is; after joining the terminal's foreground process group
// fg (lathe's), where /dev/tty is tried again too; and as the leader of a
// session of its own. It reports how far each got: "retake=no-path" where
// the terminal cannot be opened by its path (a sandbox's own /dev), else
// "retake=A,join-B,C", B being "refused-ERR" or "D/tty-E". It ends the
// process's place in its group and session: call it last.
func retakeTTY(path string, fg int) string {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return "retake=no-path"
	}
	defer f.Close()
	try := func() string {
		if err := unix.IoctlSetInt(int(f.Fd()), unix.TIOCSCTTY, 0); err != nil {
			return errName(err)
		}
		return "taken"
	}
	first := try()
	joined := "join-"
	if err := unix.Setpgid(0, fg); err != nil {
		joined += "refused-" + errName(err)
	} else {
		joined += try() + "/tty-"
		if t, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
			joined += errName(err)
		} else {
			t.Close()
			joined += "opened"
		}
	}
	if _, err := unix.Setsid(); err != nil {
		return "retake=" + first + "," + joined + ",setsid-" + errName(err)
	}
	return "retake=" + first + "," + joined + "," + try()
}

func errName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// TestNoTerminal runs a child the way lathe runs each kind, from a lathe
// whose controlling terminal is a pseudo-terminal and whose standard input
// and error are that terminal, the worst a caller could hand on. The child
// must not reach it: /dev/tty does not open (its session has no terminal),
// it cannot make the terminal its controlling one (as it is, from the
// terminal's foreground process group, which it cannot join from another
// session, or as the leader of a new session),
// no standard descriptor is a terminal, and TIOCSTI has nothing to push
// into. The parent's own probe shows that the terminal was there to reach.
func TestNoTerminal(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"dev", "standard", "hardened", "process"} {
		t.Run(mode, func(t *testing.T) {
			requireMode(t, mode)
			master, slave := ptytest.Open(t)
			go io.Copy(io.Discard, master)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			parent := exec.CommandContext(ctx, exe, "tty-parent", mode, t.TempDir())
			var out bytes.Buffer
			parent.Stdin, parent.Stderr = slave, slave
			parent.Stdout = &out
			parent.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
			if err := parent.Run(); err != nil {
				t.Fatalf("the parent: %v (a timeout means the run hung on the terminal)\n%s", err, out.String())
			}
			text := out.String()
			t.Log(text)
			if !strings.Contains(text, "parent: tty=opened fd0=terminal") {
				t.Fatalf("the parent does not have the terminal, so the test proves nothing:\n%s", text)
			}
			child := text[strings.Index(text, "child:"):]
			// ENXIO on the host's kernel, EIO on gVisor's: either way not
			// opened.
			if strings.Contains(child, "tty=opened") || !strings.Contains(child, "sti=no-terminal") ||
				strings.Contains(child, "=terminal") || strings.Contains(child, "taken") ||
				strings.Contains(child, "opened") {
				t.Errorf("the child reached the terminal:\n%s", child)
			}
		})
	}
}

// TestOrphansDieWithLathe kills a fake lathe with SIGKILL while a child it
// started in each way runs with descendants of three kinds: one in its
// process group, one that made a session of its own (setsid), and one
// whose parent has exited (a double fork). None may outlive lathe.
func TestOrphansDieWithLathe(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i, mode := range []string{"dev", "standard", "hardened", "process", "mcp", "run_command"} {
		t.Run(mode, func(t *testing.T) {
			requireMode(t, mode)
			// The sleeps are told apart from any other by their length.
			marker := strconv.Itoa(900000 + os.Getpid()%10000*10 + i)
			script := fmt.Sprintf("sleep %[1]s & setsid sleep %[1]s & (sleep %[1]s &); wait", marker)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var out bytes.Buffer
			fake := exec.CommandContext(ctx, exe, "fake-lathe", mode, t.TempDir(), script)
			fake.Stdout, fake.Stderr = &out, &out
			// A lathe killed with SIGKILL leaves a hardened run's private
			// directory behind (docs/security.md): it goes with the test's.
			fake.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			if err := fake.Start(); err != nil {
				t.Fatal(err)
			}
			defer fake.Wait()
			defer fake.Process.Kill()
			// Under gVisor the sleeps are not host processes; what must
			// go is runsc and the sandbox's processes, each of which names
			// the run's private directory.
			find := func() []int { return processes("sleep\x00" + marker + "\x00") }
			if mode == "hardened" {
				find = func() []int {
					if dir := runscDir(fake.Process.Pid); dir != "" {
						return processes(dir)
					}
					return nil
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			var seen []int
			for seen = find(); len(seen) < 3; seen = find() {
				if time.Now().After(deadline) {
					t.Fatalf("the child's processes never all started (saw %v); fake lathe:\n%s", seen, out.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			fake.Process.Kill()
			fake.Wait()
			deadline = time.Now().Add(5 * time.Second)
			for {
				left := find()
				if len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					for _, pid := range left {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					t.Fatalf("processes %v outlived lathe by 5 s", left)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// requireMode skips a mode whose profile this machine cannot provide.
func requireMode(t *testing.T, mode string) {
	t.Helper()
	switch mode {
	case "standard":
		requireStandard(t)
	case "hardened":
		requireHardened(t)
	}
}

// runscDir returns the private directory of the hardened run that the
// process parent started through the init, "" until there is one.
func runscDir(parent int) string {
	for _, pid := range processes("lathe-sandbox-init\x00") {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		i := bytes.LastIndexByte(stat, ')')
		if err != nil || i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscan(string(stat[i+1:]), &state, &ppid); err != nil || ppid != parent {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		for j, a := range args {
			if a == "--root" && j+1 < len(args) {
				return filepath.Dir(args[j+1])
			}
		}
	}
	return ""
}

// processes returns the live processes (zombies are not) whose command
// line contains want.
func processes(want string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), want) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestForcedEndLeavesNothing ends a call by force, as lathe does at a
// deadline: the command ignores SIGTERM, and has a descendant in its
// group, one in a session of its own and one orphaned by a double fork.
// When the call has returned, none of them may be left. "process" is a
// process tool without a profile cancelled after its grace period; "dev"
// a dev run ended by sandbox.Kill, as run_command ends one.
func TestForcedEndLeavesNothing(t *testing.T) {
	for i, mode := range []string{"process", "dev"} {
		t.Run(mode, func(t *testing.T) {
			marker := strconv.Itoa(800000 + os.Getpid()%10000*10 + i)
			script := fmt.Sprintf("trap '' TERM; sleep %[1]s & setsid sleep %[1]s & (sleep %[1]s &); wait", marker)
			find := func() []int { return processes("sleep\x00" + marker + "\x00") }
			defer func() {
				for _, pid := range find() {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			ws := t.TempDir()
			switch mode {
			case "process":
				rt, err := process.New(process.Command{Argv: []string{"/bin/sh", "-c", script}, Dir: ws},
					process.Options{GracePeriod: 200 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer rt.Close()
				go func() {
					_, err := rt.Execute(ctx, &tool.Definition{Name: "t"}, &tool.Call{Name: "t", Arguments: json.RawMessage(`{}`)})
					done <- err
				}()
			case "dev":
				cfg := sandbox.Config{Profile: sandbox.Dev, Workspace: ws}
				cmd := exec.CommandContext(ctx, "/bin/sh", "-c", script)
				cmd.Env = cfg.Env()
				cmd.WaitDelay = 5 * time.Second
				cleanup, err := cfg.Wrap(cmd)
				defer cleanup()
				if err != nil {
					t.Fatal(err)
				}
				cmd.Cancel = func() error { return sandbox.Kill(cmd) }
				go func() { done <- cmd.Run() }()
			}
			deadline := time.Now().Add(20 * time.Second)
			for len(find()) < 3 {
				if time.Now().After(deadline) {
					t.Fatalf("the command's three sleeps never all started (saw %v)", find())
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("the cancelled call did not return within 15 s")
			}
			// Whatever is still there a moment after the call returned
			// was left behind.
			deadline = time.Now().Add(time.Second)
			for len(find()) > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("processes %v outlived the call", find())
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

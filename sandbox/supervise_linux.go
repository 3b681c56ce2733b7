package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// Supervise rewrites cmd, not yet started, so that it runs in a session of
// its own with no terminal, and so that it and every process it starts end
// when it ends or when lathe does, however lathe ends (SIGKILL included).
// Every process lathe starts outside a sandbox profile (process tools, MCP
// servers) goes through it; [Config.Wrap] does the same for every profile.
//
// The command is started through the sandbox's init (see the package
// documentation) with only these steps: the init forks the program, reaps
// whatever the program's descendants leave to it (it is their subreaper),
// and kills all of them when the program exits or when lathe's end of a
// pipe closes. Standard input, output and error pass through untouched,
// unless one is a terminal, which is replaced by /dev/null. Without cgo,
// where the init is missing, the command gets its own session and a
// parent-death signal only: its descendants may outlive lathe then.
//
// Supervise keeps cmd.Stdin, Stdout, Stderr, Env, Dir and Cancel; it sets
// cmd.SysProcAttr (Setsid: the command leads its own session and process
// group, so that signalling the group still reaches all of it).
func Supervise(cmd *exec.Cmd) {
	if cmd.Err != nil || supervised(cmd) {
		return
	}
	attr := ownSession(cmd)
	line, err := lifeline()
	if !haveInit || err != nil {
		// The kernel's parent-death signal is tied to the thread that
		// started the command, not to lathe's process: should that
		// thread end first, the command is killed early. Go's runtime
		// ends a thread only when a goroutine locked to it exits.
		attr.Pdeathsig = syscall.SIGKILL
		return
	}
	args := []string{initArg0, "lathe", strconv.Itoa(3 + len(cmd.ExtraFiles)), "fork", "1", "path", cmd.Path, "--"}
	cmd.ExtraFiles = append(cmd.ExtraFiles, line)
	cmd.Args = append(args, cmd.Args...)
	cmd.Path = "/proc/self/exe"
}

// superviseArgs is the number of arguments Supervise puts before the
// command's own.
const superviseArgs = 8

// supervised reports whether cmd already starts through the init.
func supervised(cmd *exec.Cmd) bool {
	return cmd.Path == "/proc/self/exe" && len(cmd.Args) > 0 && cmd.Args[0] == initArg0
}

// unsupervise undoes Supervise, so that Wrap can build its own steps for
// a command a runtime already supervised.
func unsupervise(cmd *exec.Cmd) {
	a := cmd.Args
	if !supervised(cmd) || len(a) < superviseArgs || a[1] != "lathe" || a[3] != "fork" || a[5] != "path" || a[7] != "--" {
		return
	}
	if fd, err := strconv.Atoi(a[2]); err == nil && fd-3 == len(cmd.ExtraFiles)-1 {
		cmd.ExtraFiles = cmd.ExtraFiles[:fd-3]
	}
	cmd.Path = a[6]
	cmd.Args = a[superviseArgs:]
}

// ownSession sets cmd to start in a session of its own: it has no
// controlling terminal then, so it cannot open /dev/tty, and it leads its
// own process group. Setpgid, which a session leader cannot take, is
// cleared.
func ownSession(cmd *exec.Cmd) *syscall.SysProcAttr {
	attr := cmd.SysProcAttr
	if attr == nil {
		attr = &syscall.SysProcAttr{}
	}
	attr.Setsid = true
	attr.Setpgid, attr.Pgid = false, 0
	attr.Setctty, attr.Foreground = false, false
	cmd.SysProcAttr = attr
	return attr
}

// lifeline returns the read end of a pipe whose write end this process
// holds, unwritten, until it exits: the sandbox's init watches it to learn
// that lathe is gone. A pipe is closed by the kernel when the process ends,
// whichever thread started the command; a parent-death signal would come
// when that thread ends. Both ends are close-on-exec, so no other child
// holds the write end open.
var lifeline = sync.OnceValues(func() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	lifelineWriter = w
	return r, nil
})

// lifelineWriter keeps the write end of the lifeline reachable, so that
// the garbage collector never closes it.
var lifelineWriter *os.File

// endSignal is what Kill sends the init: SIGRTMAX, which the init does not
// pass on but takes as the request to end the run (init_linux.c).
const endSignal = syscall.Signal(64)

// Kill ends a started command at once, with every process it started:
// a command started through the init (by [Supervise] or [Config.Wrap])
// is asked to kill its tool and then, as its subreaper, every descendant
// left, including those that left the process group; any other command's
// process group gets SIGKILL. A SIGKILL of the init itself would end it
// before it could do that. Use Kill as the command's Cancel where the end
// is to be immediate, and wherever a run must be stopped now.
func Kill(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	if supervised(cmd) {
		return cmd.Process.Signal(endSignal)
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

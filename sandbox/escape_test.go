//go:build linux

package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestMain lets the test binary serve as a program inside the sandbox:
// argv[1] "connect" dials argv[2] over TCP, or over the network argv[3]
// names ("unix" for a Unix socket, "@name" an abstract one); "socket"
// makes a socket of family argv[2], type argv[3] and protocol argv[4];
// "socketpair" makes a Unix socket pair.
func TestMain(m *testing.M) {
	helperMain()
	threadsMain()
	if len(os.Args) >= 3 && os.Args[1] == "connect" {
		network := "tcp"
		if len(os.Args) == 4 {
			network = os.Args[3]
		}
		c, err := net.DialTimeout(network, os.Args[2], 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
		os.Exit(0)
	}
	if len(os.Args) == 5 && os.Args[1] == "socket" {
		var n [3]int
		for i := range n {
			n[i], _ = strconv.Atoi(os.Args[2+i])
		}
		fd, err := syscall.Socket(n[0], n[1], n[2])
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		syscall.Close(fd)
		fmt.Println("socket made")
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == "socketpair" {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		fmt.Println("socket made")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requireStandard skips where the kernel cannot provide the standard
// profile at all (no unprivileged user namespaces, say), after checking
// that Wrap says so rather than running the command unconfined. The check
// is made once per test binary.
func requireStandard(t *testing.T) {
	t.Helper()
	standardOnce.Do(func() {
		ws, err := os.MkdirTemp("", "lathe-standard")
		if err != nil {
			standardSkip = err.Error()
			return
		}
		defer os.RemoveAll(ws)
		cleanup, err := sandbox.Config{Workspace: ws}.Wrap(exec.Command("/bin/true"))
		cleanup()
		if errors.Is(err, sandbox.ErrUnavailable) {
			standardSkip = fmt.Sprintf("the standard profile is not available here: %v", err)
			return
		}
		out, err := run(t, sandbox.Config{Workspace: ws}, "echo ok")
		if err != nil || strings.TrimSpace(out) != "ok" {
			standardSkip = fmt.Sprintf("the standard profile cannot run on this kernel: %v: %s", err, out)
		}
	})
	if standardSkip != "" {
		t.Skip(standardSkip)
	}
}

var (
	standardOnce sync.Once
	standardSkip string
)

// run runs script with /bin/sh under cfg and returns its combined output.
func run(t *testing.T, cfg sandbox.Config, script string) (string, error) {
	t.Helper()
	return runArgv(t, cfg, "/bin/sh", "-c", script)
}

func runArgv(t *testing.T, cfg sandbox.Config, argv ...string) (string, error) {
	t.Helper()
	wall := cfg.Limits.WithDefaults().Wall
	if wall > 30*time.Second {
		wall = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wall)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = os.Environ() // the worst a caller could pass: Wrap must filter it
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	cleanup, err := cfg.Wrap(cmd)
	if err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	defer cleanup()
	out, err := cmd.CombinedOutput()
	if ctx.Err() == context.DeadlineExceeded {
		// No test expects its run to reach the deadline: one that does has
		// hung, and says which test and which command did.
		t.Errorf("%s: %q was still running after %v and was killed; output:\n%s", t.Name(), argv, wall, out)
	}
	return string(out), err
}

// startMarker is what the command markStart adds prints. That command
// spells it in two pieces, so that an error message quoting the command
// line (runsc's, when the sandbox fails to start) cannot pass for it.
const startMarker = "sandbox-started"

// markStart prefixes script with a command printing startMarker. A test
// that expects a script to be denied requires the marker as well: a
// sandbox that never starts denies everything, and so proves nothing.
func markStart(script string) string {
	return `printf '%s-%s\n' sandbox started; ` + script
}

// ran reports whether out, the output of a script passed through
// markStart, shows that the script ran.
func ran(out string) bool {
	return strings.Contains(out, startMarker)
}

// requireKillsFailed checks the "name=STATUS" lines that a signal test's
// script prints after each of its kills: each kill must have run and
// failed. A kill that never ran would leave its target alive just the same.
func requireKillsFailed(t *testing.T, out string, names ...string) {
	t.Helper()
	for _, name := range names {
		m := regexp.MustCompile(`\b` + name + `=(\d+)`).FindStringSubmatch(out)
		switch {
		case m == nil:
			t.Errorf("the kill of %s did not run; output:\n%s", name, out)
		case m[1] == "0":
			t.Errorf("the kill of %s succeeded; output:\n%s", name, out)
		}
	}
}

// memoryHog is a perl script that holds a string of as many bytes as its
// argument says. It prints a marker first, unbuffered, so that a test can
// tell an allocation that failed from a perl that never ran; the size is an
// argument rather than a constant, or perl would fold the allocation into
// its compile phase, before the marker. The marker too is spelled in
// pieces, lest an error message quoting the command line stand in for it.
const memoryHog = `perl -e '$| = 1; printf "%s-%s\n", "perl", "allocating"; $x = "a" x $ARGV[0]; print "held\n"' `

// requireMemoryLimit runs memoryHog under cfg, which must limit memory to
// 64 MiB: an allocation past the limit must fail after perl started, and a
// MiB must fit, so that the failure is the limit's doing rather than the
// script's. Where the run gets a memory cgroup, the hog is a GiB, which the
// address space would allow (it is the limit and a reserve of some GiB
// more): only the cgroup stops it. Where it does not, the hog is past the
// address space, and fails as one allocation without touching any memory.
func requireMemoryLimit(t *testing.T, cfg sandbox.Config) {
	t.Helper()
	hog, bound := int64(1<<30), "the memory cgroup"
	if !sandbox.MemoryCgroup(cfg) {
		hog, bound = cfg.Limits.Memory+sandbox.AddressReserve()+64<<20, "the address space (no memory cgroup here)"
	}
	t.Logf("a hog of %d MiB against %s", hog>>20, bound)
	out, err := run(t, cfg, memoryHog+strconv.FormatInt(hog, 10))
	if !strings.Contains(out, "perl-allocating") {
		t.Fatalf("perl never reached the allocation: %v\n%s", err, out)
	}
	if err == nil || strings.Contains(out, "held") {
		t.Fatalf("a %d MiB allocation passed a 64 MiB limit, bounded by %s: %v\n%s", hog>>20, bound, err, out)
	}
	if out, err := run(t, cfg, memoryHog+strconv.Itoa(1<<20)); err != nil || !strings.Contains(out, "held") {
		t.Fatalf("a 1 MiB allocation failed under a 64 MiB limit: %v\n%s", err, out)
	}
}

// forkBomb returns a script that starts a fork bomb, then counts the run's
// processes in /proc while the bomb spreads, and prints the most it saw. It
// counts until a second after the count first reaches three quarters of
// limit, so that forks have failed by then, or for 15 seconds on a machine
// too slow to get there. The shell waits with builtins only (it reads the
// clock from /proc/uptime): a fork of its own would fail as the bomb's do,
// and dash, not being interactive, exits when one of its forks fails. It
// must not exit early either: when PID 1 of the run exits, the kernel kills
// the rest.
func forkBomb(limit int) string {
	return fmt.Sprintf(`b() { b | b & }; b
read start _ </proc/uptime; start=${start%%.*}; end=$((start + 15)); max=0; full=
while :; do
	n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; [ $n -gt $max ] && max=$n
	read now _ </proc/uptime; now=${now%%.*}
	[ -z "$full" ] && [ $max -ge %d ] && full=1 && end=$((now + 2))
	[ $now -ge $end ] && break
done
echo processes=$max`, limit*3/4)
}

// requireBombContained checks the output of markStart(forkBomb) run with a
// limit of limit processes: forks failed (dash says "Cannot fork", bash
// "Resource temporarily unavailable", both for the EAGAIN of the pids
// cgroup or RLIMIT_NPROC), and no count went far past the limit.
func requireBombContained(t *testing.T, out string, limit int) {
	t.Helper()
	if !ran(out) {
		t.Fatalf("the script never ran; output:\n%s", out)
	}
	if !strings.Contains(out, "Cannot fork") && !strings.Contains(out, "Resource temporarily unavailable") {
		t.Errorf("no fork failed, so the process limit was never reached; output tail: %s", outputTail(out))
	}
	counts := regexp.MustCompile(`processes=(\d+)`).FindAllStringSubmatch(out, -1)
	if len(counts) == 0 {
		t.Errorf("the shell counted no processes; output tail: %s", outputTail(out))
	}
	// A count reads /proc while processes exit and others start in their
	// place, so it can come out a little over the number alive at any one
	// time; an unbounded bomb reaches hundreds in the two seconds.
	for _, c := range counts {
		if n, _ := strconv.Atoi(c[1]); n > limit+limit/4 {
			t.Errorf("%d processes ran under a limit of %d", n, limit)
		}
	}
}

// outputTail returns the end of a long output, which is where a fork bomb's
// shell prints its counts.
func outputTail(out string) string {
	return out[max(0, len(out)-400):]
}

// fixture makes base/ws, the workspace, and base/outside with a secret, a
// symbolic link from the workspace to the secret and to the outside
// directory.
func fixture(t *testing.T) (ws, outside string) {
	base := t.TempDir()
	ws, outside = filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "dirlink")); err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func TestEscapeFiles(t *testing.T) {
	requireStandard(t)
	ws, outside := fixture(t)
	secret := filepath.Join(outside, "secret.txt")
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	reads := map[string]string{
		"dotdot":          "cat ../outside/secret.txt",
		"absolute":        "cat " + secret,
		"symlink":         "cat link",
		"dir symlink":     "cat dirlink/secret.txt",
		"proc self root":  "cat /proc/self/root" + secret,
		"proc 1 root":     "cat /proc/1/root" + secret,
		"proc 1 cwd":      "cat /proc/1/cwd/../outside/secret.txt",
		"host shadow":     "cat /etc/shadow",
		"hard link":       "ln " + secret + " hard && cat hard",
		"host home":       "ls /root",
		"host processes":  "cat /proc/*/environ | grep -a TOPSECRET",
		"mount back":      "mount --bind / mnt && cat mnt" + secret,
		"new user ns":     "unshare -r cat " + secret,
		"open by handle":  "cat /sys/kernel/notes",
		"dev block":       "ls /dev/sda /dev/nvme0n1 && cat /dev/sda",
		"outside via tmp": "cat /tmp/../" + secret,
	}
	for name, script := range reads {
		t.Run("read "+name, func(t *testing.T) {
			out, err := run(t, cfg, markStart(script))
			if !ran(out) || err == nil || strings.Contains(out, "TOPSECRET") {
				t.Errorf("%q: err=%v, output:\n%s", script, err, out)
			}
		})
	}
	writes := map[string]string{
		"dotdot":      "echo x > ../outside/new.txt",
		"absolute":    "echo x > " + filepath.Join(outside, "new.txt"),
		"symlink":     "echo x > link",
		"dir symlink": "echo x > dirlink/new.txt",
		"proc root":   "echo x > /proc/self/root" + filepath.Join(outside, "new.txt"),
		"system dir":  "echo x > /usr/lathe-escape",
		"etc":         "echo x > /etc/passwd",
		"root dir":    "echo x > /lathe-escape",
		"rename out":  "echo x > in.txt && mv in.txt ../outside/new.txt",
	}
	for name, script := range writes {
		t.Run("write "+name, func(t *testing.T) {
			if out, err := run(t, cfg, markStart(script)); !ran(out) {
				t.Errorf("%q never ran: err=%v, output:\n%s", script, err, out)
			}
			if b, _ := os.ReadFile(secret); string(b) != "TOPSECRET\n" {
				t.Errorf("%q changed the secret: %q", script, b)
			}
			for _, p := range []string{filepath.Join(outside, "new.txt"), "/usr/lathe-escape", "/lathe-escape"} {
				if _, err := os.Lstat(p); err == nil {
					os.Remove(p)
					t.Errorf("%q created %s", script, p)
				}
			}
		})
	}
	t.Run("workspace is writable", func(t *testing.T) {
		out, err := run(t, cfg, "echo hello > made.txt && cat made.txt && pwd")
		if err != nil || !strings.Contains(out, "hello") || !strings.Contains(out, ws) {
			t.Fatalf("err=%v output:\n%s", err, out)
		}
		if b, err := os.ReadFile(filepath.Join(ws, "made.txt")); err != nil || string(b) != "hello\n" {
			t.Fatalf("made.txt: %q, %v", b, err)
		}
	})
	t.Run("read permission", func(t *testing.T) {
		c := cfg
		c.Perms.Read = []string{outside}
		out, err := run(t, c, "cat "+secret+"; echo x > "+filepath.Join(outside, "new.txt"))
		if !strings.Contains(out, "TOPSECRET") {
			t.Fatalf("a read path is not readable: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
			t.Fatal("a read path is writable")
		}
	})
}

func TestEscapeNetwork(t *testing.T) {
	requireStandard(t)
	l := listenLoopback(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// No memory limit: a race-detector binary maps more than the default.
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Perms:  sandbox.Permissions{Read: []string{filepath.Dir(exe)}},
		Limits: sandbox.Limits{Memory: -1}}
	networkRefused(t, cfg, exe, l)
}

// networkRefused connects from the sandbox under cfg to the host's
// loopback listener l and to addresses beyond the host: each must be
// refused. With the network allowed the same helper reaches l, so the
// refusals are the sandbox's doing.
func networkRefused(t *testing.T, cfg sandbox.Config, exe string, l net.Listener) {
	t.Helper()
	for _, addr := range []string{l.Addr().String(), "[::1]:80", "1.1.1.1:53", "10.0.0.1:80"} {
		out, err := runArgv(t, cfg, exe, "connect", addr)
		if err == nil || !strings.Contains(out, "refused:") {
			t.Errorf("connect %s: err=%v output:\n%s", addr, err, out)
		}
	}
	cfg.Perms.Network = true
	if out, err := runArgv(t, cfg, exe, "connect", l.Addr().String()); err != nil || !strings.Contains(out, "connected") {
		t.Errorf("with the network allowed: err=%v output:\n%s", err, out)
	}
}

func TestEscapeSignal(t *testing.T) {
	requireStandard(t)
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	pid := victim.Process.Pid
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir()}
	out, err := run(t, cfg, markStart(fmt.Sprintf(
		"kill -9 %d; echo victim=$?; kill -9 %d; echo lathe=$?; kill -9 -1; echo all=$?; kill -9 1; echo init=$?",
		pid, os.Getpid())))
	t.Logf("err=%v output:\n%s", err, out)
	if !ran(out) {
		t.Fatal("the script never ran")
	}
	requireKillsFailed(t, out, "victim", "lathe", "all")
	// Pid 1 of the run's namespace is the shell itself, which the kernel
	// shields from a SIGKILL sent from inside: this kill succeeds without
	// effect, and the status line after it shows that it ran.
	if !regexp.MustCompile(`\binit=\d+`).MatchString(out) {
		t.Error("the kill of pid 1 did not run")
	}
	time.Sleep(50 * time.Millisecond)
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the victim is gone: %v", err)
	}
}

func TestEscapeForkBomb(t *testing.T) {
	requireStandard(t)
	if !pidsCgroup(t) && os.Geteuid() == 0 {
		skipWithoutCgroups(t, "no pids cgroup can be created here; RLIMIT_NPROC does not bind the host's root, so a fork bomb would not be contained")
	}
	// The wall time is the script's longest wait and more; the bomb is
	// bounded by the process limit, which requireBombContained checks.
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Processes: 32, Wall: 20 * time.Second}}
	out, _ := run(t, cfg, markStart(forkBomb(cfg.Limits.Processes)))
	requireBombContained(t, out, cfg.Limits.Processes)
	t.Logf("output tail: %s", outputTail(out))
}

func TestEscapeMemoryHog(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Memory: 64 << 20, Wall: 20 * time.Second}}
	requireMemoryLimit(t, cfg)
}

func TestEscapeEnvironment(t *testing.T) {
	requireStandard(t)
	t.Setenv("LATHE_TEST_SECRET_TOKEN", "TOPSECRET")
	t.Setenv("LATHE_TEST_ALLOWED", "visible")
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		cfg := sandbox.Config{Profile: p, Workspace: t.TempDir(),
			Perms: sandbox.Permissions{Env: []string{"LATHE_TEST_ALLOWED"}}}
		script := "env"
		if p == sandbox.Standard {
			// A host process can read the environment of lathe itself
			// under dev; under standard no host process is visible.
			script += "; cat /proc/*/environ 2>/dev/null"
		}
		out, err := run(t, cfg, script)
		if err != nil && p == sandbox.Dev {
			t.Fatalf("%s: %v\n%s", p, err, out)
		}
		if strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "LATHE_TEST_ALLOWED=visible") ||
			strings.Contains(out, "HOME=/root") {
			t.Errorf("%s: output:\n%s", p, out)
		}
		// The allowed variable shows once in env's output and again in
		// the environment of each of the run's own processes, so a
		// second sighting shows that the cat read /proc at all.
		if p == sandbox.Standard && strings.Count(out, "LATHE_TEST_ALLOWED=visible") < 2 {
			t.Errorf("%s: /proc/*/environ showed no environment:\n%s", p, out)
		}
	}
}

func TestHardenedNeverDowngrades(t *testing.T) {
	// An empty PATH hides runsc where it is installed, so that the refusal
	// is tested on every machine rather than only on those without gVisor.
	t.Setenv("PATH", t.TempDir())
	cfg := sandbox.Config{Profile: sandbox.Hardened, Workspace: t.TempDir()}
	cmd := exec.Command("/bin/true")
	cleanup, err := cfg.Wrap(cmd)
	defer cleanup()
	if err == nil {
		t.Fatal("the hardened profile was accepted without runsc")
	}
	if !strings.Contains(err.Error(), "runsc") {
		t.Errorf("the error does not say what is missing: %v", err)
	}
}

// pidsCgroup reports whether a run gets a pids cgroup here.
func pidsCgroup(t *testing.T) bool {
	files, cleanup := sandbox.NewCgroup(sandbox.Limits{Processes: 8})
	defer cleanup()
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(filepath.Dir(f), "pids.max")); err == nil {
			return true
		}
	}
	return false
}

func TestEscapeHidden(t *testing.T) {
	requireStandard(t)
	ws := t.TempDir()
	for _, d := range []string{".lathe", "private"} {
		os.Mkdir(filepath.Join(ws, d), 0o700)
		os.WriteFile(filepath.Join(ws, d, "lathe.db"), []byte("TOPSECRET"), 0o600)
	}
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
	// Unhidden, a directory is readable from inside, so the denials below
	// are Hide's doing; lathe's own .lathe is hidden without being asked.
	if out, err := run(t, cfg, "cat private/lathe.db"); err != nil || !strings.Contains(out, "TOPSECRET") {
		t.Fatalf("without Hide: err=%v output:\n%s", err, out)
	}
	cfg.Hide = []string{"private", "fresh"}
	for _, script := range []string{
		"cat .lathe/lathe.db", "echo x > .lathe/lathe.db", "echo x > .lathe/grant", "rm -rf .lathe",
		"mv .lathe gone", "umount .lathe", "cat private/lathe.db", "echo x > private/grant",
		"echo x > fresh/planted", "rmdir fresh && mkdir fresh && echo x > fresh/planted",
	} {
		out, err := run(t, cfg, markStart(script))
		if !ran(out) || err == nil || strings.Contains(out, "TOPSECRET") {
			t.Errorf("%q: err=%v output:\n%s", script, err, out)
		}
	}
	for _, d := range []string{".lathe", "private"} {
		if b, _ := os.ReadFile(filepath.Join(ws, d, "lathe.db")); string(b) != "TOPSECRET" {
			t.Errorf("%s changed: %q", d, b)
		}
	}
	for _, p := range []string{filepath.Join(ws, ".lathe", "grant"), filepath.Join(ws, "private", "grant"),
		filepath.Join(ws, "fresh", "planted"), filepath.Join(ws, "gone")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
	}
	// The state directory removed and made again on the host (its inode
	// number is often the same) is hidden again, not shown through a
	// template whose mount over the old one is gone.
	os.RemoveAll(filepath.Join(ws, ".lathe"))
	os.Mkdir(filepath.Join(ws, ".lathe"), 0o700)
	os.WriteFile(filepath.Join(ws, ".lathe", "lathe.db"), []byte("TOPSECRET"), 0o600)
	if out, err := run(t, cfg, markStart("cat .lathe/lathe.db")); !ran(out) || err == nil || strings.Contains(out, "TOPSECRET") {
		t.Errorf("the state directory made again is visible: err=%v output:\n%s", err, out)
	}
}

// listenLoopback listens on a loopback port of the host, accepting and
// closing connections until the test ends: the target the network tests try
// to reach from inside a sandbox.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

// TestEscapeFileSize writes a file past the run's file-size limit: the
// write stops at the limit and fails, the writer gets SIGXFSZ, and lathe
// (this test process) lives on and can still write large files itself.
func TestEscapeFileSize(t *testing.T) {
	requireStandard(t)
	const limit = 1 << 20
	for _, p := range []sandbox.Profile{sandbox.Dev, sandbox.Standard} {
		t.Run(string(p), func(t *testing.T) {
			ws := t.TempDir()
			cfg := sandbox.Config{Profile: p, Workspace: ws, Limits: sandbox.Limits{FileSize: limit}}
			// A dev run starts where its command says, not in the
			// workspace.
			cd := "cd " + ws + " && "
			// Within the limit the same command works, so the failure
			// below is the limit's doing.
			if out, err := run(t, cfg, cd+"head -c 524288 /dev/zero > small"); err != nil {
				t.Fatalf("a file under the limit: %v\n%s", err, out)
			}
			if fi, err := os.Stat(filepath.Join(ws, "small")); err != nil || fi.Size() != 524288 {
				t.Fatalf("small: %v, %v", fi, err)
			}
			out, err := run(t, cfg, markStart(cd+"head -c 4194304 /dev/zero > big; echo status=$?"))
			if !ran(out) || err != nil {
				t.Fatalf("the script did not run to its end: %v\n%s", err, out)
			}
			if strings.Contains(out, "status=0") || !strings.Contains(out, "status=") {
				t.Errorf("writing 4 MiB under a 1 MiB limit succeeded:\n%s", out)
			}
			fi, err := os.Stat(filepath.Join(ws, "big"))
			if err != nil || fi.Size() > limit {
				t.Errorf("big: %v, %v (limit %d)", fi, err, limit)
			}
			// The limit is the run's, not lathe's.
			f := filepath.Join(t.TempDir(), "lathe-big")
			if err := os.WriteFile(f, make([]byte, 2*limit), 0o600); err != nil {
				t.Errorf("lathe itself cannot write past the run's limit: %v", err)
			}
		})
	}
}

// TestEscapeSockets tries, with the network off, the sockets that reach past
// a network namespace: vsock (the hypervisor and the host, whatever the
// namespace), packet and other kernel families, a Unix socket that a host
// process bound in the workspace, and an abstract Unix socket of the host.
// Each family is tried on the host first: one the host cannot make either
// proves nothing and is skipped, saying so.
func TestEscapeSockets(t *testing.T) {
	requireStandard(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws,
		Perms:  sandbox.Permissions{Read: []string{filepath.Dir(exe)}},
		Limits: sandbox.Limits{Memory: -1}}
	const afVsock, afAlg = 40, 38
	for _, c := range []struct {
		name               string
		family, typ, proto int
	}{
		{"vsock", afVsock, syscall.SOCK_STREAM, 0},
		{"packet", syscall.AF_PACKET, syscall.SOCK_RAW, 0},
		{"alg", afAlg, syscall.SOCK_SEQPACKET, 0},
		{"unix", syscall.AF_UNIX, syscall.SOCK_STREAM, 0},
		{"unix datagram", syscall.AF_UNIX, syscall.SOCK_DGRAM, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if fd, err := syscall.Socket(c.family, c.typ, c.proto); err != nil {
				t.Skipf("the host cannot make this socket either: %v", err)
			} else {
				syscall.Close(fd)
			}
			args := []string{exe, "socket", strconv.Itoa(c.family), strconv.Itoa(c.typ), strconv.Itoa(c.proto)}
			out, err := runArgv(t, cfg, args...)
			if err == nil || !strings.Contains(out, "refused:") {
				t.Errorf("a %s socket was made with the network off: err=%v output:\n%s", c.name, err, out)
			}
		})
	}
	// What ordinary programs need still works: a Unix socket pair (pipes
	// between processes), and IP and netlink sockets, which reach nothing
	// in a network namespace with no interface up.
	for _, argv := range [][]string{
		{exe, "socketpair"},
		{exe, "socket", strconv.Itoa(syscall.AF_INET), strconv.Itoa(syscall.SOCK_DGRAM), "0"},
		{exe, "socket", strconv.Itoa(syscall.AF_INET6), strconv.Itoa(syscall.SOCK_STREAM), "0"},
		{exe, "socket", strconv.Itoa(syscall.AF_NETLINK), strconv.Itoa(syscall.SOCK_RAW), "0"},
	} {
		if out, err := runArgv(t, cfg, argv...); err != nil || !strings.Contains(out, "socket made") {
			t.Errorf("%q failed in the sandbox: %v\n%s", argv[1:], err, out)
		}
	}

	t.Run("host listener in the workspace", func(t *testing.T) {
		path := filepath.Join(ws, "host.sock")
		accepted := listenUnix(t, path)
		unixRefused(t, cfg, exe, path, accepted, "Unix socket", "listener")
		// With the network allowed the same command reaches it, so the
		// refusal above is the sandbox's doing.
		on := cfg
		on.Perms.Network = true
		if out, err := runArgv(t, on, exe, "connect", path, "unix"); err != nil || !strings.Contains(out, "connected") {
			t.Errorf("with the network allowed: err=%v output:\n%s", err, out)
		}
		select {
		case <-accepted:
		case <-time.After(5 * time.Second):
			t.Error("the listener never saw the connection made with the network allowed")
		}
	})
	t.Run("host abstract socket", func(t *testing.T) {
		name := fmt.Sprintf("@lathe-test-%d", os.Getpid())
		unixRefused(t, cfg, exe, name, listenUnix(t, name), "abstract socket", "abstract listener")
	})
}

// unixRefused connects from the sandbox under cfg to the host's Unix
// socket at path (or abstract name, "@…"), whose listener signals on
// accepted: the connection must be refused and the listener must not see
// one. socket and listener name the two in what a failure says.
func unixRefused(t *testing.T, cfg sandbox.Config, exe, path string, accepted <-chan struct{}, socket, listener string) {
	t.Helper()
	out, err := runArgv(t, cfg, exe, "connect", path, "unix")
	if err == nil || !strings.Contains(out, "refused:") {
		t.Errorf("the host's %s was reached: err=%v output:\n%s", socket, err, out)
	}
	select {
	case <-accepted:
		t.Errorf("the host's %s accepted a connection from the sandbox", listener)
	case <-time.After(200 * time.Millisecond):
	}
}

// listenUnix listens on the Unix socket path (or abstract name, "@…") until
// the test ends, and signals each connection it accepts.
func listenUnix(t *testing.T, path string) <-chan struct{} {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
			accepted <- struct{}{}
		}
	}()
	return accepted
}

// TestEscapeConfig tries to change the workspace's lathe.toml, which the
// next lathe started there would load (local tools, profiles, allow rules),
// and to plant configuration in .lathe/. Each script does it under dev
// first, which does not protect them, so that a denial under standard is
// the sandbox's doing.
func TestEscapeConfig(t *testing.T) {
	requireStandard(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(ws, "lathe.toml")
	const original = "# the user's configuration\n"
	reset := func() {
		os.RemoveAll(filepath.Join(ws, ".lathe"))
		for _, p := range []string{cfgFile, filepath.Join(ws, "moved")} {
			os.Remove(p)
		}
		if err := os.WriteFile(cfgFile, []byte(original), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "evil.toml"), []byte("[tools.x]\ncommand = \"x\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	intact := func() bool {
		b, err := os.ReadFile(cfgFile)
		fi, lerr := os.Lstat(cfgFile)
		_, planted := os.Stat(filepath.Join(ws, ".lathe", "planted"))
		return err == nil && lerr == nil && fi.Mode().IsRegular() && string(b) == original && planted != nil
	}
	for _, script := range []string{
		"echo '[tools.x]' >> lathe.toml",
		"echo '[tools.x]' > lathe.toml",
		": > lathe.toml",
		"rm -f lathe.toml",
		"mv lathe.toml moved",
		"mv evil.toml lathe.toml",
		"ln -sf evil.toml lathe.toml",
		"mkdir -p .lathe && echo x > .lathe/planted",
	} {
		t.Run(script, func(t *testing.T) {
			reset()
			dev := sandbox.Config{Profile: sandbox.Dev, Workspace: ws}
			if out, err := run(t, dev, "cd "+ws+" && "+script); err != nil || intact() {
				t.Fatalf("under dev the script did not change the configuration, so the test proves nothing: %v\n%s", err, out)
			}
			reset()
			std := sandbox.Config{Profile: sandbox.Standard, Workspace: ws}
			out, err := run(t, std, markStart(script))
			if !ran(out) {
				t.Fatalf("the script never ran: %v\n%s", err, out)
			}
			if !intact() {
				b, _ := os.ReadFile(cfgFile)
				t.Errorf("the configuration changed under standard: lathe.toml now %q; output:\n%s", b, out)
			}
		})
	}
	t.Run("readable", func(t *testing.T) {
		reset()
		out, err := run(t, sandbox.Config{Profile: sandbox.Standard, Workspace: ws}, "cat lathe.toml")
		if err != nil || out != original {
			t.Errorf("lathe.toml is not readable in the sandbox: %v\n%s", err, out)
		}
	})
}

// TestEscapeUserDirs: a workspace that is the home directory holds lathe's
// per-user directories, the user's own configuration (trusted without
// asking) and the state directory of trust records and grants. A standard
// run hides them like the workspace's .lathe; without that, one command
// would rewrite the configuration every later lathe trusts.
func TestEscapeUserDirs(t *testing.T) {
	requireStandard(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	files := []string{".config/lathe/config.toml", ".local/state/lathe/trust/record", ".config/other/keep"}
	for _, f := range files {
		p := filepath.Join(home, f)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte("TOPSECRET"), 0o600)
	}
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: home}
	// The rest of the home directory is the workspace as any other: the
	// denials below are the hiding's doing.
	if out, err := run(t, cfg, markStart("cat .config/other/keep && echo x >> .config/other/keep")); !ran(out) || err != nil || !strings.Contains(out, "TOPSECRET") {
		t.Fatalf("a file beside lathe's directories: err=%v output:\n%s", err, out)
	}
	for _, script := range []string{
		"cat .config/lathe/config.toml", "echo x > .config/lathe/config.toml",
		"cat .local/state/lathe/trust/record", "echo x > .local/state/lathe/trust/forged",
		"rm -rf .config/lathe", "mv .local/state/lathe gone",
	} {
		out, err := run(t, cfg, markStart(script))
		if !ran(out) || err == nil || strings.Contains(out, "TOPSECRET") {
			t.Errorf("%q: err=%v output:\n%s", script, err, out)
		}
	}
	for _, f := range files[:2] {
		if b, _ := os.ReadFile(filepath.Join(home, f)); string(b) != "TOPSECRET" {
			t.Errorf("%s changed: %q", f, b)
		}
	}
	for _, p := range []string{".local/state/lathe/trust/forged", "gone"} {
		if _, err := os.Lstat(filepath.Join(home, p)); err == nil {
			t.Errorf("%s exists", p)
		}
	}
}

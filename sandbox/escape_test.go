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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// TestMain lets the test binary serve as a program inside the sandbox:
// argv[1] "connect" dials TCP to argv[2].
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "connect" {
		c, err := net.DialTimeout("tcp", os.Args[2], 2*time.Second)
		if err != nil {
			fmt.Println("refused:", err)
			os.Exit(3)
		}
		c.Close()
		fmt.Println("connected")
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
	return string(out), err
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
			out, err := run(t, cfg, script)
			if err == nil || strings.Contains(out, "TOPSECRET") {
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
			run(t, cfg, script)
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
	for _, addr := range []string{l.Addr().String(), "[::1]:80", "1.1.1.1:53", "10.0.0.1:80"} {
		out, err := runArgv(t, cfg, exe, "connect", addr)
		if err == nil || !strings.Contains(out, "refused:") {
			t.Errorf("connect %s: err=%v output:\n%s", addr, err, out)
		}
	}
	// The helper itself works when the network is allowed, so the denial
	// above is the sandbox's doing.
	cfg.Perms.Network = true
	if out, err := runArgv(t, cfg, exe, "connect", l.Addr().String()); err != nil || !strings.Contains(out, "connected") {
		t.Errorf("with network allowed: err=%v output:\n%s", err, out)
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
	out, err := run(t, cfg, fmt.Sprintf("kill -9 %d; kill -9 %d; kill -9 -1; kill -9 1; true", pid, os.Getpid()))
	t.Logf("err=%v output:\n%s", err, out)
	time.Sleep(50 * time.Millisecond)
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the victim is gone: %v", err)
	}
}

func TestEscapeForkBomb(t *testing.T) {
	requireStandard(t)
	if !pidsCgroup(t) && os.Geteuid() == 0 {
		t.Skip("no pids cgroup can be created here; RLIMIT_NPROC does not bind the host's root, so a fork bomb would not be contained")
	}
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Processes: 32, Wall: 5 * time.Second}}
	start := time.Now()
	out, _ := run(t, cfg, "b() { b | b & }; b; sleep 2; echo survived")
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the fork bomb ran %v", d)
	}
	t.Logf("output tail: %.200s", out)
}

func TestEscapeMemoryHog(t *testing.T) {
	requireStandard(t)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: t.TempDir(),
		Limits: sandbox.Limits{Memory: 64 << 20, Wall: 20 * time.Second}}
	// tail keeps a "line" of 1 GiB of zero bytes in memory.
	out, err := run(t, cfg, "perl -e '$x = \"a\" x (1<<30); print \"held\\n\"'")
	if err == nil || strings.Contains(out, "held") {
		t.Fatalf("a 1 GiB allocation passed a 64 MiB limit: %v\n%s", err, out)
	}
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
	}
}

func TestHardenedNeverDowngrades(t *testing.T) {
	cfg := sandbox.Config{Profile: sandbox.Hardened, Workspace: t.TempDir()}
	cmd := exec.Command("/bin/true")
	cleanup, err := cfg.Wrap(cmd)
	defer cleanup()
	if _, lerr := exec.LookPath("runsc"); lerr != nil && err == nil {
		t.Fatal("the hardened profile was accepted without runsc")
	}
	if err != nil && !strings.Contains(err.Error(), "runsc") {
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
	state := filepath.Join(ws, ".lathe")
	os.Mkdir(state, 0o700)
	os.WriteFile(filepath.Join(state, "lathe.db"), []byte("TOPSECRET"), 0o600)
	cfg := sandbox.Config{Profile: sandbox.Standard, Workspace: ws, Hide: []string{".lathe", "fresh"}}
	for _, script := range []string{
		"cat .lathe/lathe.db", "echo x > .lathe/lathe.db", "echo x > .lathe/grant", "rm -rf .lathe",
		"mv .lathe gone", "umount .lathe", "echo x > fresh/planted", "rmdir fresh && mkdir fresh && echo x > fresh/planted",
	} {
		out, err := run(t, cfg, script)
		if err == nil || strings.Contains(out, "TOPSECRET") {
			t.Errorf("%q: err=%v output:\n%s", script, err, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(state, "lathe.db")); string(b) != "TOPSECRET" {
		t.Errorf("the state changed: %q", b)
	}
	for _, p := range []string{filepath.Join(state, "grant"), filepath.Join(ws, "fresh", "planted"), filepath.Join(ws, "gone")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists", p)
		}
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

//go:build linux

package sandbox_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/sandbox"
)

// requireHardened skips where runsc is not installed, after checking that
// Wrap refuses the profile there rather than running the command weaker. It
// skips in the test VM too (LATHE_TEST_IN_VM, set by .ci/vm/go-test), whose
// processor may be emulated: gVisor intercepts every system call, and run
// that way it takes minutes where the tests allow seconds. The hardened
// tests run on the host instead.
func requireHardened(t *testing.T) {
	t.Helper()
	if os.Getenv("LATHE_TEST_IN_VM") != "" {
		t.Skip("SKIP: the hardened profile is tested on the host, not in the test VM (LATHE_TEST_IN_VM is set), where gVisor may run on an emulated processor")
	}
	if _, err := exec.LookPath("runsc"); err != nil {
		cleanup, werr := sandbox.Config{Profile: sandbox.Hardened, Workspace: t.TempDir()}.Wrap(exec.Command("/bin/true"))
		cleanup()
		if werr == nil {
			t.Fatal("the hardened profile was accepted without runsc")
		}
		t.Skipf("SKIP: gVisor's runsc is not installed, so the hardened profile cannot be tested: %v", werr)
	}
}

func hardenedConfig(ws string) sandbox.Config {
	return sandbox.Config{Profile: sandbox.Hardened, Workspace: ws}
}

func TestHardenedRuns(t *testing.T) {
	requireHardened(t)
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "in.txt"), []byte("inside\n"), 0o644)
	out, err := run(t, hardenedConfig(ws), "cat in.txt; echo dir=$(pwd) home=$HOME tmp=$TMPDIR; echo written > out.txt; echo t > /tmp/t && cat /tmp/t")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// HOME is the run's own /tmp, never the workspace.
	for _, want := range []string{"inside", "dir=" + ws, "home=/tmp ", "tmp=/tmp", "\nt\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("the workspace write is not visible on the host: %q, %v", b, err)
	}
	if out, err := run(t, hardenedConfig(ws), "exit 7"); err == nil {
		t.Errorf("exit 7 succeeded: %s", out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exit 7: %v\n%s", err, out)
	}
}

func TestHardenedFiles(t *testing.T) {
	requireHardened(t)
	ws, outside := fixture(t)
	secret := filepath.Join(outside, "secret.txt")
	cfg := hardenedConfig(ws)
	for name, script := range map[string]string{
		"dotdot":       "cat ../outside/secret.txt",
		"absolute":     "cat " + secret,
		"link":         "cat link",
		"dirlink":      "cat dirlink/secret.txt",
		"shadow":       "cat /etc/shadow",
		"root":         "cat /root/.bashrc /root/.profile",
		"write-out":    "echo x > " + filepath.Join(outside, "planted"),
		"write-etc":    "echo x >> /etc/passwd",
		"write-usr":    "echo x > /usr/planted",
		"write-root":   "echo x > /planted",
		"proc-root":    "cat /proc/1/root" + secret,
		"proc-environ": "cat /proc/*/environ | grep -a LATHE_TEST_SECRET",
	} {
		out, err := run(t, cfg, markStart(script))
		if !ran(out) || err == nil || strings.Contains(out, "TOPSECRET") {
			t.Errorf("%s: %q: err=%v output:\n%s", name, script, err, out)
		}
	}
	// /tmp is the sandbox's own: a write beside the workspace (which
	// lies under the host's /tmp here) may succeed, but not on the host.
	if out, err := run(t, cfg, markStart("echo x > "+filepath.Join(filepath.Dir(outside), "planted"))); !ran(out) {
		t.Errorf("the write beside the workspace never ran: %v\n%s", err, out)
	}
	for _, p := range []string{filepath.Join(outside, "planted"), filepath.Join(filepath.Dir(outside), "planted"), "/usr/planted", "/planted"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was written", p)
		}
	}
	// Granted, the secret is readable, so the denials above are the
	// sandbox's doing.
	c := cfg
	c.Perms.Read = []string{outside}
	if out, err := run(t, c, "cat "+secret); err != nil || !strings.Contains(out, "TOPSECRET") {
		t.Errorf("a read path is not readable: %v\n%s", err, out)
	}
}

func TestHardenedHidden(t *testing.T) {
	requireHardened(t)
	ws := t.TempDir()
	for _, d := range []string{".lathe", "private"} {
		os.Mkdir(filepath.Join(ws, d), 0o700)
		os.WriteFile(filepath.Join(ws, d, "lathe.db"), []byte("TOPSECRET"), 0o600)
	}
	cfg := hardenedConfig(ws)
	// Unhidden, a directory is readable from inside, so the denials below
	// are Hide's doing; lathe's own .lathe is hidden without being asked.
	if out, err := run(t, cfg, "cat private/lathe.db"); err != nil || !strings.Contains(out, "TOPSECRET") {
		t.Fatalf("without Hide: err=%v output:\n%s", err, out)
	}
	cfg.Hide = []string{"private"}
	for _, script := range []string{"cat .lathe/lathe.db", "echo x > .lathe/grant", "rm -rf .lathe", "cat private/lathe.db"} {
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
}

// TestHardenedConfig tries to change the workspace's lathe.toml under
// hardened; the same scripts change it under dev (TestEscapeConfig).
func TestHardenedConfig(t *testing.T) {
	requireHardened(t)
	ws := t.TempDir()
	cfgFile := filepath.Join(ws, "lathe.toml")
	const original = "# the user's configuration\n"
	for _, script := range []string{
		"echo '[tools.x]' >> lathe.toml", ": > lathe.toml", "rm -f lathe.toml",
		"mv lathe.toml moved", "echo x > evil && mv evil lathe.toml",
	} {
		os.Remove(filepath.Join(ws, "moved"))
		os.Remove(cfgFile)
		if err := os.WriteFile(cfgFile, []byte(original), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := run(t, hardenedConfig(ws), markStart(script))
		if !ran(out) {
			t.Fatalf("%q never ran: %v\n%s", script, err, out)
		}
		if b, err := os.ReadFile(cfgFile); err != nil || string(b) != original {
			t.Errorf("%q changed lathe.toml: %q, %v; output:\n%s", script, b, err, out)
		}
	}
	if out, err := run(t, hardenedConfig(ws), "cat lathe.toml"); err != nil || out != original {
		t.Errorf("lathe.toml is not readable: %v\n%s", err, out)
	}
}

func TestHardenedNetwork(t *testing.T) {
	requireHardened(t)
	l := listenLoopback(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// No memory limit: a race-detector binary maps more than the default.
	cfg := hardenedConfig(t.TempDir())
	cfg.Perms.Read = []string{filepath.Dir(exe)}
	cfg.Limits.Memory = -1
	networkRefused(t, cfg, exe, l)
}

func TestHardenedEnvironment(t *testing.T) {
	requireHardened(t)
	t.Setenv("LATHE_TEST_SECRET", "TOPSECRET")
	t.Setenv("LATHE_TEST_ALLOWED", "visible")
	cfg := hardenedConfig(t.TempDir())
	cfg.Perms.Env = []string{"LATHE_TEST_ALLOWED"}
	out, err := run(t, cfg, "env; cat /proc/*/environ 2>/dev/null")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if strings.Contains(out, "TOPSECRET") || !strings.Contains(out, "LATHE_TEST_ALLOWED=visible") {
		t.Errorf("output:\n%s", out)
	}
	// The allowed variable shows once in env's output and again in the
	// environment of each of the run's own processes, so a second
	// sighting shows that the cat read /proc at all.
	if strings.Count(out, "LATHE_TEST_ALLOWED=visible") < 2 {
		t.Errorf("/proc/*/environ showed no environment:\n%s", out)
	}
}

// TestHardenedCancel cancels a run: it ends quickly, and neither the
// sandbox's processes nor runsc's state are left behind.
func TestHardenedCancel(t *testing.T) {
	requireHardened(t)
	ws := t.TempDir()
	// Cancelled once the run has started, however long gVisor takes to
	// start on this machine: a run that ends before it is cancelled failed
	// by itself and says nothing about cancelling.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", markStart("sleep 300 & sleep 300; echo not cancelled"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	cleanup, err := hardenedConfig(ws).Wrap(cmd)
	if err != nil {
		t.Fatal(err)
	}
	id := cmd.Args[len(cmd.Args)-1]
	stateDir := ""
	for i, a := range cmd.Args {
		if a == "--root" && i+1 < len(cmd.Args) {
			stateDir = cmd.Args[i+1]
		}
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Read until the start marker; then cancel, and read the rest.
	r.SetReadDeadline(time.Now().Add(2 * time.Minute))
	var out strings.Builder
	br := bufio.NewReader(r)
	for !ran(out.String()) {
		line, err := br.ReadString('\n')
		out.WriteString(line)
		if err != nil {
			cancel()
			cmd.Wait()
			t.Fatalf("the run ended or hung before it started: %v\n%s", err, out.String())
		}
	}
	cancelled := time.Now()
	cancel()
	err = cmd.Wait()
	if d := time.Since(cancelled); d > 15*time.Second {
		t.Errorf("the cancelled run took %v to end", d)
	}
	// What the run wrote before it ended; a process of it still holding
	// the pipe is the leftover check's to find, not a reason to wait.
	r.SetReadDeadline(time.Now().Add(time.Second))
	rest, _ := io.ReadAll(br)
	out.Write(rest)
	if err == nil || strings.Contains(out.String(), "not cancelled") {
		t.Errorf("a cancelled run succeeded: %v\n%s", err, out.String())
	}
	cleanup()
	if stateDir == "" {
		t.Fatalf("no runsc state directory in %q", cmd.Args)
	}
	if _, err := os.Stat(filepath.Dir(stateDir)); err == nil {
		t.Errorf("the run's directory %s is left behind", filepath.Dir(stateDir))
	}
	// Nothing of the run may be left: no runsc process naming its
	// container, no sleep started inside it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := leftovers(id)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind: %q", left)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leftovers returns the command lines of host processes that mention id.
func leftovers(id string) []string {
	var left []string
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil || len(b) == 0 {
			continue
		}
		line := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(line, id) {
			left = append(left, line)
		}
	}
	return left
}

func TestHardenedSignal(t *testing.T) {
	requireHardened(t)
	victim := exec.Command("sleep", "60")
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { victim.Process.Kill(); victim.Wait() }()
	pid := victim.Process.Pid
	out, err := run(t, hardenedConfig(t.TempDir()), markStart(
		"kill -9 "+strconv.Itoa(pid)+"; echo victim=$?; kill -9 "+strconv.Itoa(os.Getpid())+"; echo lathe=$?; kill -9 -1; echo all=$?"))
	t.Logf("err=%v output:\n%s", err, out)
	if !ran(out) {
		t.Fatal("the script never ran")
	}
	requireKillsFailed(t, out, "victim", "lathe", "all")
	time.Sleep(50 * time.Millisecond)
	if err := victim.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the victim is gone: %v", err)
	}
}

func TestHardenedMemoryHog(t *testing.T) {
	requireHardened(t)
	cfg := hardenedConfig(t.TempDir())
	cfg.Limits = sandbox.Limits{Memory: 64 << 20, Wall: 20 * time.Second}
	requireMemoryLimit(t, cfg)
}

func TestHardenedForkBomb(t *testing.T) {
	requireHardened(t)
	cfg := hardenedConfig(t.TempDir())
	// The wall time leaves gVisor room to start on a slow machine (some
	// seconds under emulation); the bomb itself is bounded by the process
	// limit, which requireBombContained checks, not by the wall time.
	cfg.Limits = sandbox.Limits{Processes: 32, Wall: 30 * time.Second}
	start := time.Now()
	out, _ := run(t, cfg, markStart(forkBomb(cfg.Limits.Processes)))
	// RLIMIT_NPROC binds inside gVisor ("Cannot fork"): the tool is root
	// of the sandbox without capabilities.
	requireBombContained(t, out, cfg.Limits.Processes)
	t.Logf("ended after %v; output tail: %s", time.Since(start), outputTail(out))
}

// Package wasmbuild builds the WASM tools of lathe's tests and benchmarks
// from their sources, so that no compiled module is kept in the repository:
// C with clang and wasi-libc ([C]), Go with GOOS=wasip1 ([Go]).
//
// The C toolchain is Debian's clang, lld, wasi-libc and
// libclang-rt-14-dev-wasm32, which .ci/run installs. Where it is missing, a
// test that needs it skips and says what to install; under CI (the CI
// variable is set) it fails instead, so that CI never passes by skipping.
package wasmbuild

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cFlags are the flags every C tool is built with, after
// --target=wasm32-wasi --sysroot=/usr.
var cFlags = []string{"-O2", "-Wall", "-Wextra", "-Werror"}

var (
	probeOnce sync.Once
	probeErr  error
)

// probe builds an empty C program once per process, which is the surest
// way to learn that clang, wasm-ld, the C library and the compiler's
// runtime for wasm32 are all there.
func probe() error {
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lathe-wasmbuild")
		if err != nil {
			probeErr = err
			return
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "probe.c")
		if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { return puts(\"\") < 0; }\n"), 0o644); err != nil {
			probeErr = err
			return
		}
		if _, err := exec.LookPath("clang"); err != nil {
			probeErr = fmt.Errorf("clang is not installed")
			return
		}
		probeErr = clang(filepath.Join(dir, "probe.wasm"), src)
	})
	return probeErr
}

func clang(out string, srcs ...string) error {
	args := append([]string{"--target=wasm32-wasi", "--sysroot=/usr"}, cFlags...)
	args = append(args, "-o", out)
	args = append(args, srcs...)
	cmd := exec.Command("clang", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("clang %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return nil
}

// HaveC reports whether the C toolchain for WASI works here; when it does
// not, it skips tb (or, under CI, fails it) with the reason.
func HaveC(tb testing.TB) {
	tb.Helper()
	if err := probe(); err != nil {
		msg := fmt.Sprintf("cannot build C for wasm32-wasi (install Debian's clang lld wasi-libc libclang-rt-14-dev-wasm32, as .ci/run does): %v", err)
		if os.Getenv("CI") != "" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
}

// BuildC compiles the C sources into a WASI command module at out, for a
// caller that builds once for many tests; it assumes [HaveC] has passed.
func BuildC(out string, srcs ...string) error { return clang(out, srcs...) }

// C compiles the C sources into a WASI command module at out and returns
// out. It skips or fails tb as [HaveC] does when the toolchain is missing,
// and fails it when the sources do not compile.
func C(tb testing.TB, out string, srcs ...string) string {
	tb.Helper()
	HaveC(tb)
	if err := clang(out, srcs...); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Go builds the Go package in dir (a directory path) for GOOS=wasip1
// GOARCH=wasm into out and returns out.
func Go(tb testing.TB, out, dir string) string {
	tb.Helper()
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("GOOS=wasip1 GOARCH=wasm go build in %s: %v\n%s", dir, err, b)
	}
	return out
}

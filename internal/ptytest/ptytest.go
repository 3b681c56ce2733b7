//go:build linux

// Package ptytest opens pseudo-terminals for tests that must see what a
// program does on a terminal, or that a child cannot reach one.
package ptytest

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Open returns the two ends of a new pseudo-terminal, both closed when the
// test ends. A machine without pseudo-terminals (no /dev/ptmx, or no devpts
// mounted on /dev/pts) skips the test, saying so; a pseudo-terminal that
// opens but cannot be unlocked, named or reached fails it, since that is
// not a machine without one.
func Open(t testing.TB) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("naming the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no devpts mounted on /dev/pts here: %v", err)
	}
	if err != nil {
		t.Fatalf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return m, s
}

package cli

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestTerminalSafe checks that output to a terminal is escaped and output
// to anything else is left as it is.
func TestTerminalSafe(t *testing.T) {
	var buf bytes.Buffer
	if w := terminalSafe(&buf); w != &buf {
		t.Error("a buffer was wrapped")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if w := terminalSafe(f); w != f {
		t.Error("a file was wrapped")
	}
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := terminalSafe(s).(escapeWriter); !ok {
		t.Error("a terminal was not wrapped")
	}
}

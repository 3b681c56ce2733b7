package cli

import (
	"bytes"
	"os"
	"testing"

	"github.com/lathe-tools/lathe/internal/ptytest"
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
	_, s := ptytest.Open(t)
	if _, ok := terminalSafe(s).(escapeWriter); !ok {
		t.Error("a terminal was not wrapped")
	}
}

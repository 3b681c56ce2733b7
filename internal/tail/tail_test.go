package tail

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBufferKeepsTheEnd(t *testing.T) {
	w := &Buffer{Max: 8}
	for _, s := range []string{"abc", "defgh", "ijklmnopqrstuvwxyz", "12"} {
		w.Write([]byte(s))
	}
	if got := string(w.Bytes()); got != "uvwxyz12" {
		t.Errorf("kept %q, want the last 8 bytes %q", got, "uvwxyz12")
	}
	big := strings.Repeat("x", 100) + "END"
	w.Write([]byte(big))
	if got := string(w.Bytes()); got != "xxxxxEND" {
		t.Errorf("after one long write kept %q", got)
	}
}

func TestLastStartsAtALineAndARune(t *testing.T) {
	s := strings.Repeat("é", 20) + "\nthe last line"
	got := Last(s, 20)
	if got != "…the last line" {
		t.Errorf("Last = %q, want it to start at the last line", got)
	}
	got = Last(strings.Repeat("é", 20), 7)
	if !utf8.ValidString(got) || !strings.HasPrefix(got, "…") {
		t.Errorf("Last cut a rune: %q", got)
	}
}

func TestStderrNote(t *testing.T) {
	if StderrNote([]byte("\n\n")) != "" {
		t.Error("an empty standard error got a note")
	}
	if got := StderrNote([]byte("boom\xff\n")); got != "\nstderr:\nboom\uFFFD" {
		t.Errorf("StderrNote = %q", got)
	}
	long := StderrNote([]byte(strings.Repeat("y", 3*Shown)))
	if len(long) > Shown+len("\nstderr:\n…") {
		t.Errorf("a long standard error showed %d bytes", len(long))
	}
}

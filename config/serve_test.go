package config

import (
	"strings"
	"testing"
	"time"
)

// TestServeApprovalWait: [serve] approval_wait reads as a duration, and a
// bad value is an error naming the file, the line and the key.
func TestServeApprovalWait(t *testing.T) {
	c, err := Parse("lathe.toml", []byte("[serve]\napproval_wait = \"90s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.ApprovalWait != 90*time.Second {
		t.Errorf("approval_wait = %s, want 1m30s", c.Serve.ApprovalWait)
	}
	for _, bad := range []string{`"soon"`, `"-1m"`, `90`, `"90"`} {
		_, err := Parse("lathe.toml", []byte("[serve]\n\napproval_wait = "+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "lathe.toml:3") || !strings.Contains(err.Error(), "approval_wait") {
			t.Errorf("approval_wait = %s: want an error at lathe.toml:3 naming the key, got %v", bad, err)
		}
	}
}

// TestServeApprovalWaitWithoutTrust: how long a call waits for a person
// lets nothing run, so it applies from a file not yet trusted, and is no
// widening.
func TestServeApprovalWaitWithoutTrust(t *testing.T) {
	c, err := Parse("lathe.toml", []byte("[serve]\napproval_wait = \"2m\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	safe, ws := c.Split()
	if safe.Serve.ApprovalWait != 2*time.Minute || len(ws) != 0 {
		t.Errorf("untrusted: approval_wait %s, widenings %v; want 2m and none", safe.Serve.ApprovalWait, ws)
	}
}

// TestServeRoundBounds: [serve] round_wait, max_waiting_per_client and
// max_waiting read as a duration and counts; a bad value is an error naming
// the file, the line and the key.
func TestServeRoundBounds(t *testing.T) {
	c, err := Parse("lathe.toml", []byte("[serve]\nround_wait = \"5m\"\nmax_waiting_per_client = 8\nmax_waiting = 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Serve.RoundWait != 5*time.Minute || c.Serve.MaxWaitingPerClient != 8 || c.Serve.MaxWaiting != 100 {
		t.Errorf("serve: %+v", c.Serve)
	}
	for _, bad := range []string{`round_wait = "soon"`, `round_wait = "-1s"`, `max_waiting = -1`, `max_waiting_per_client = "8"`} {
		key, _, _ := strings.Cut(bad, " ")
		_, err := Parse("lathe.toml", []byte("[serve]\n\n"+bad+"\n"))
		if err == nil || !strings.Contains(err.Error(), "lathe.toml:3") || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: want an error at lathe.toml:3 naming %s, got %v", bad, key, err)
		}
	}
}

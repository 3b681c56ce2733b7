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

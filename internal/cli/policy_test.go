package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/tool"
)

func TestApprover(t *testing.T) {
	req := &policy.Request{Tool: &tool.Definition{Name: "write_file"}, Arguments: `{"path":"a.txt"}`,
		Reason: "the tool may change or destroy data"}
	for _, c := range []struct {
		input string
		want  policy.Answer
	}{
		{"o\n", policy.Answer{Verdict: policy.AllowOnce}},
		{"what\nsession\n", policy.Answer{Verdict: policy.AllowSession}},
		{"a\n", policy.Answer{Verdict: policy.AllowAlways}},
		{"d\nuse edit_file\n", policy.Answer{Verdict: policy.Refuse, Reason: "use edit_file"}},
	} {
		var out strings.Builder
		got, err := newApprover(strings.NewReader(c.input), &out).Approve(context.Background(), req)
		if err != nil || got != c.want {
			t.Errorf("input %q: %+v, %v; want %+v", c.input, got, err, c.want)
		}
		if !strings.Contains(out.String(), `write_file wants to run: {"path":"a.txt"}`) {
			t.Errorf("prompt %q", out.String())
		}
	}
	// End of input is no answer: the call is denied, not approved.
	if _, err := newApprover(strings.NewReader(""), &strings.Builder{}).Approve(context.Background(), req); err == nil {
		t.Error("no input gave an answer")
	}
}

// An operation's ask names the operation and its subject, not the call's
// arguments: the person approves what the running tool wants to do.
func TestApproverOfAnOperation(t *testing.T) {
	req := &policy.Request{Tool: &tool.Definition{Name: "scrape"}, Arguments: "fetch https://api.example.com/v1",
		Reason:    "the rule tool=\"*\" operation=\"fetch\" approval=\"ask\"",
		Operation: &policy.OperationRequest{Kind: "fetch", Subject: "https://api.example.com/v1"}}
	var out strings.Builder
	got, err := newApprover(strings.NewReader("o\n"), &out).Approve(context.Background(), req)
	if err != nil || got.Verdict != policy.AllowOnce {
		t.Fatalf("answer %+v, %v", got, err)
	}
	if !strings.Contains(out.String(), "scrape, running, wants to fetch: https://api.example.com/v1") {
		t.Errorf("prompt %q", out.String())
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	if got, _ := parseSince("1h", now); !got.Equal(now.Add(-time.Hour)) {
		t.Errorf("1h: %v", got)
	}
	if got, _ := parseSince("2026-01-01T00:00:00Z", now); got.Day() != 1 {
		t.Errorf("RFC 3339: %v", got)
	}
	if _, err := parseSince("yesterday", now); err == nil {
		t.Error("yesterday parsed")
	}
}

func TestWriteOperations(t *testing.T) {
	var out strings.Builder
	writeOperations(&out, audit.Record{Operations: []audit.Operation{
		{Kind: "read", Subject: "src/main.go", Approval: "allow", DecidedBy: "default", Bytes: 120, Duration: 2 * time.Millisecond},
		{Kind: "fetch", Subject: "https://api.example.com/?token=[redacted]", Approval: "deny", DecidedBy: "rule", Error: "denied"},
		{Kind: "read", Subject: "secret.txt", Approval: "deny", DecidedBy: "permissions"},
		{Kind: "write", Subject: "out/x", Approval: "allow", DecidedBy: "default", Error: "no space left on device"},
	}, OperationsDropped: 3})
	for _, want := range []string{
		"\t  read\tallow\tdefault\tok\t2ms\t120\tsrc/main.go\n",
		"\t  fetch\tdeny\trule\tdenied\t0s\t0\thttps://api.example.com/?token=[redacted]\n",
		"\t  read\tdeny\tpermissions\tdenied\t0s\t0\tsecret.txt\n",
		"\t  write\tallow\tdefault\tfailed\t0s\t0\tout/x\n",
		"(3 more operations not kept)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
}

package cli

import (
	"context"
	"strings"
	"testing"
	"time"

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

package telemetry_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/telemetry"
	"github.com/lathe-tools/lathe/tool"
)

// scrape GETs the metrics h serves, as Prometheus does.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s: %s", resp.Status, b)
	}
	return string(b)
}

// TestPrometheusMetrics: the calls' durations and counts by tool, outcome
// and decision, and the approvals by answer, as a scrape reads them. A
// client that calls made-up tool names gets one series for all of them,
// not one each: the names it picks must not grow the metrics without
// bound.
func TestPrometheusMetrics(t *testing.T) {
	s, err := telemetry.FromEnvironment(context.Background(), telemetry.Config{Prometheus: true,
		Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if s.Metrics == nil {
		t.Fatal("no Prometheus handler")
	}
	tel, err := s.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Policy{Rules: []policy.Rule{{Tool: "asked", Approval: policy.Ask}, {Tool: "refused", Approval: policy.Deny}}}
	approver := policy.ApproverFunc(func(context.Context, *policy.Request) (policy.Answer, error) {
		return policy.Answer{Verdict: policy.Refuse}, nil
	})
	outer, inner := tel.Stages(nil, []lathe.Middleware{policy.Middleware(p, policy.Options{Approver: approver})})
	e := lathe.New(lathe.Options{Outer: outer, Middleware: inner})
	defer e.Close()
	for _, n := range []string{"ok", "asked", "refused"} {
		if err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: n, Annotations: tool.Annotations{ReadOnlyHint: true}},
			func(context.Context, struct{}) (string, error) { return "fine", nil }))); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for range 3 {
		e.Call(ctx, &tool.Call{Name: "ok"})
	}
	e.Call(ctx, &tool.Call{Name: "asked"})
	e.Call(ctx, &tool.Call{Name: "refused"})
	for i := range 50 {
		e.Call(ctx, &tool.Call{Name: fmt.Sprintf("made_up_%d", i)})
	}

	text := scrape(t, s.Metrics)
	for _, want := range []string{
		`lathe_call_duration_seconds_count{error_type="",gen_ai_tool_name="ok",lathe_decision="allow",lathe_outcome="ok"} 3`,
		`lathe_call_duration_seconds_count{error_type="denied",gen_ai_tool_name="asked",lathe_decision="ask",lathe_outcome="denied"} 1`,
		`lathe_call_duration_seconds_count{error_type="denied",gen_ai_tool_name="refused",lathe_decision="deny",lathe_outcome="denied"} 1`,
		`lathe_call_duration_seconds_count{error_type="unknown_tool",gen_ai_tool_name="_unknown",lathe_decision="none",lathe_outcome="unknown_tool"} 50`,
		`lathe_approval_duration_seconds_count{gen_ai_tool_name="asked",lathe_approval_answer="deny",lathe_approval_by="approver"} 1`,
	} {
		if !strings.Contains(normalize(text), want) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	if strings.Contains(text, "made_up_") {
		t.Error("an unknown tool's name made a series of its own")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// normalize writes each sample's labels in name order with empty ones
// shown, so that the test does not depend on how the exporter orders them.
func normalize(text string) string {
	re := regexp.MustCompile(`(?m)^([a-z_]+)\{([^}]*)\} (\S+)$`)
	return re.ReplaceAllStringFunc(text, func(line string) string {
		m := re.FindStringSubmatch(line)
		labels := map[string]string{"error_type": ""}
		for _, kv := range regexp.MustCompile(`([a-z_]+)="([^"]*)"`).FindAllStringSubmatch(m[2], -1) {
			labels[kv[1]] = kv[2]
		}
		if !strings.HasPrefix(m[1], "lathe_call_duration") {
			delete(labels, "error_type")
		}
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			if k == "otel_scope_name" || k == "otel_scope_version" || k == "le" {
				continue
			}
			parts = append(parts, k+`="`+labels[k]+`"`)
		}
		return m[1] + "{" + strings.Join(parts, ",") + "} " + m[3]
	})
}

package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

// TestElicitFromAnswers: an elicitation is asked property by property, in
// the server's order, and answered whole once every property has its
// answer, each as its type wants it.
func TestElicitFromAnswers(t *testing.T) {
	r := &tool.ElicitRequest{Message: "Deploy?", Schema: json.RawMessage(`{"type":"object","properties":{
		"target":{"type":"string","title":"Target","enum":["staging","production"]},
		"hero":{"type":"string","oneOf":[{"const":"hero-1","title":"Superman"},{"const":"hero-2"}]},
		"replicas":{"type":"integer","description":"How many","default":2},
		"confirm":{"type":"boolean"}}}`)}
	answers := map[string]any{}
	want := []tool.Question{
		{ID: "target", Text: "Deploy?\nTarget", Kind: tool.QuestionSelect, Options: []string{"staging", "production"}},
		{ID: "hero", Text: "Deploy?\nhero", Kind: tool.QuestionSelect, Options: []string{"hero-1", "hero-2"}},
		{ID: "replicas", Text: "Deploy?\nHow many", Kind: tool.QuestionText, Default: 2.0},
		{ID: "confirm", Text: "Deploy?\nconfirm", Kind: tool.QuestionBoolean},
	}
	given := map[string]any{"target": "staging", "hero": "hero-2", "replicas": "3", "confirm": "yes"}
	for _, w := range want {
		res, q, err := elicitFromAnswers(r, answers)
		if err != nil || res != nil || q == nil {
			t.Fatalf("with answers %v: %+v, %+v, %v; want the question %q", answers, res, q, err, w.ID)
		}
		if !reflect.DeepEqual(*q, w) {
			t.Fatalf("question = %+v, want %+v", *q, w)
		}
		answers[w.ID] = given[w.ID]
	}
	// "yes" does not parse as a boolean: the answer is refused, naming its
	// question.
	if _, _, err := elicitFromAnswers(r, answers); err == nil || !strings.Contains(err.Error(), `"confirm"`) {
		t.Fatalf("a bad boolean answer: %v, want an error naming confirm", err)
	}
	answers["confirm"] = true
	res, q, err := elicitFromAnswers(r, answers)
	if err != nil || q != nil {
		t.Fatalf("all answered: %+v, %v", q, err)
	}
	wantContent := map[string]any{"target": "staging", "hero": "hero-2", "replicas": json.Number("3"), "confirm": true}
	if res.Action != tool.ElicitAccept || !reflect.DeepEqual(res.Content, wantContent) {
		t.Fatalf("result = %+v, want accept with %v", res, wantContent)
	}
	answers["replicas"] = "three"
	if _, _, err := elicitFromAnswers(r, answers); err == nil || !strings.Contains(err.Error(), `"replicas"`) {
		t.Fatalf("a non-number: %v, want an error naming replicas", err)
	}
}

// TestElicitFromAnswersNoProperties: an elicitation that only asks whether
// to go on is one yes-or-no question; no is a decline.
func TestElicitFromAnswersNoProperties(t *testing.T) {
	r := &tool.ElicitRequest{Message: "Go on?", Schema: json.RawMessage(`{"type":"object","properties":{}}`)}
	_, q, err := elicitFromAnswers(r, nil)
	if err != nil || q == nil || q.ID != acceptAnswer || q.Kind != tool.QuestionBoolean || q.Text != "Go on?" {
		t.Fatalf("question %+v, %v", q, err)
	}
	res, _, err := elicitFromAnswers(r, map[string]any{acceptAnswer: false})
	if err != nil || res.Action != tool.ElicitDecline {
		t.Fatalf("answered no: %+v, %v; want a decline", res, err)
	}
}

// TestElicitFromAnswersRefuses: what a question cannot carry is refused
// before anything is asked.
func TestElicitFromAnswersRefuses(t *testing.T) {
	for name, r := range map[string]*tool.ElicitRequest{
		"url mode": {Message: "Sign in", Mode: "url", URL: "https://example.com/"},
		"multiple choice": {Message: "Pick", Schema: json.RawMessage(`{"type":"object","properties":{
			"name":{"type":"string"},"tags":{"type":"array","items":{"enum":["a","b"]}}}}`)},
		"number choices": {Message: "Pick", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}`)},
		"bad schema":     {Message: "Pick", Schema: json.RawMessage(`{"type":"object","properties":[1]}`)},
	} {
		if res, q, err := elicitFromAnswers(r, nil); err == nil {
			t.Errorf("%s: %+v, %+v; want an error", name, res, q)
		}
	}
}

// TestCallerNeedsAttribution: an elicitation is answered from a call's
// answers, or ends a call with a question, only when it is known to be
// that call's: carried by its context, or the server's only call in
// flight. Otherwise one client's answers could accept, unseen, what a
// server asks of another client's call.
func TestCallerNeedsAttribution(t *testing.T) {
	a := &inflight{answers: map[string]any{"confirm": true}}
	b := &inflight{}
	s := &server{inflight: map[uint64]*inflight{1: a}}
	if id, f := s.caller(context.Background()); id != 1 || f != a {
		t.Fatalf("the only call in flight: got %d %p, want 1 %p", id, f, a)
	}
	s.inflight[2] = b
	if id, f := s.caller(context.Background()); f != nil {
		t.Fatalf("two calls in flight and no attribution: got call %d, want none", id)
	}
	if id, f := s.caller(context.WithValue(context.Background(), inflightKey{}, uint64(1))); id != 1 || f != a {
		t.Fatalf("attributed to call 1: got %d %p, want 1 %p", id, f, a)
	}
	delete(s.inflight, 1)
	if id, f := s.caller(context.WithValue(context.Background(), inflightKey{}, uint64(1))); f != nil {
		t.Fatalf("attributed to a call that ended, one other in flight: got call %d, want none", id)
	}
	if id, f := s.caller(context.Background()); id != 2 || f != b {
		t.Fatalf("the only call in flight: got %d %p, want 2 %p", id, f, b)
	}
}

// TestClaimantNeedsAttribution: a server's request reaches the hooks of
// the call it is for, never those of another call in flight, which may be
// another client's; with no call to take it for, it reaches the pool's
// own hooks.
func TestClaimantNeedsAttribution(t *testing.T) {
	elicitor := func(context.Context, *tool.ElicitRequest) (*tool.ElicitResult, error) { return nil, nil }
	hasElicit := func(h tool.Hooks) bool { return h.Elicit != nil }
	asker := &inflight{ctx: newCallCtx(context.Background())}
	other := &inflight{ctx: newCallCtx(context.Background()), hooks: tool.Hooks{Elicit: elicitor}}
	s := &server{pool: &Pool{}, inflight: map[uint64]*inflight{1: asker, 2: other}}
	for name, ctx := range map[string]context.Context{
		"for the call without hooks": context.WithValue(context.Background(), inflightKey{}, uint64(1)),
		"for no call it can name":    context.Background(),
	} {
		_, _, release, ok := s.claimant(ctx, hasElicit)
		release()
		if ok {
			t.Errorf("%s: the other call's elicitor was chosen", name)
		}
	}
	_, h, release, ok := s.claimant(context.WithValue(context.Background(), inflightKey{}, uint64(2)), hasElicit)
	release()
	if !ok || h.Elicit == nil {
		t.Error("a request for the call with an elicitor did not reach it")
	}
	s.pool.opts.Hooks = tool.Hooks{Elicit: elicitor}
	if _, _, release, ok := s.claimant(context.Background(), hasElicit); !ok {
		t.Error("with no call to take it for, the pool's elicitor was not chosen")
	} else {
		release()
	}
}

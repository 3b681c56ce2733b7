package server

import "testing"

// answers finds the event that answers a request, whatever the spelling
// of its id, and nothing else: a notification, a request of the server's,
// the answer to another request.
func TestAnswersFindsTheAnswer(t *testing.T) {
	for _, c := range []struct {
		body, event string
		want        bool
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n", true},
		{`{"jsonrpc":"2.0","id":7.0,"method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":1,\"message\":\"x\"}}\n\n", true},
		{`{"jsonrpc":"2.0","id":"a\u0062","method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"ab\",\"result\":{}}\n\n", true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, `{"jsonrpc":"2.0","id":7,"result":{}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n", false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}\n\n", false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":7}}\n\n", false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"elicitation/create\",\"params\":{}}\n\n", false},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, ": ok\n\n", false},
	} {
		id, ok := postedID([]byte(c.body))
		if !ok {
			t.Errorf("%s: no request id found", c.body)
			continue
		}
		if got := answers([]byte(c.event), id); got != c.want {
			t.Errorf("request %s, event %q: answers = %v, want %v", c.body, c.event, got, c.want)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`not json`,
	} {
		if _, ok := postedID([]byte(body)); ok {
			t.Errorf("%s: taken as one request with an id", body)
		}
	}
}

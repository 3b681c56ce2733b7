package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// listing returns a capture awaiting the answer to tools/list request 1.
func listing() *capture {
	c := newCapture()
	c.pending[`1`] = true
	return c
}

func TestScreen(t *testing.T) {
	deep := strings.Repeat(`[`, 300) + strings.Repeat(`]`, 300)
	for _, tc := range []struct {
		name, msg, want string
		rejected        []string
	}{
		{"nothing bad", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`,
			`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}}`, nil},
		{"deep and malformed tools cut, the rest kept byte for byte",
			`{"jsonrpc":"2.0", "id" : 1,"result":{"nextCursor":"x","tools":[ {"name":"a"} , {"name":"d","x":` + deep + `},{"name":1},{"name":"b","k":[1, 2]}]}}`,
			`{"jsonrpc":"2.0", "id" : 1,"result":{"nextCursor":"x","tools":[{"name":"a"},{"name":"b","k":[1, 2]}]}}`,
			[]string{`tool "d" left out: its definition nests deeper than 256 levels`, `tool #2 of the list left out`}},
		{"an escaped key is read as JSON reads it", `{"id":1,"result":{"tool\u0073":[{"name":"d","x":` + deep + `}]}}`,
			`{"id":1,"result":{"tool\u0073":[]}}`, []string{`tool "d" left out`}},
		{"another request's answer passes", `{"id":2,"result":{"tools":[{"name":1}]}}`,
			`{"id":2,"result":{"tools":[{"name":1}]}}`, nil},
		{"malformed JSON passes, for the SDK to refuse", `{"id":1,"result":{"tools":[{"name":"a"}`,
			`{"id":1,"result":{"tools":[{"name":"a"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := listing()
			got := string(c.screen([]byte(tc.msg)))
			if got != tc.want {
				t.Errorf("screen:\n got %s\nwant %s", got, tc.want)
			}
			rej := c.takeRejected()
			if len(rej) != len(tc.rejected) {
				t.Fatalf("rejected %v, want %d", rej, len(tc.rejected))
			}
			for i, r := range rej {
				if !strings.Contains(r.Error(), tc.rejected[i]) {
					t.Errorf("rejection %q, want %q", r.Error(), tc.rejected[i])
				}
			}
		})
	}
}

// FuzzScreen: screening never panics and never hangs, and what it makes
// of valid JSON is valid JSON.
func FuzzScreen(f *testing.F) {
	f.Add([]byte(`{"id":1,"result":{"tools":[{"name":"a"},{"name":"b","x":[[[]]]}]}}`))
	f.Add([]byte(`{"id":1,"result":{"tools":[{"name":"a\"]"},"x",1,null,{"name":{}}]}}`))
	f.Add([]byte(`{"id":"1","result":{"tools":[]}}`))
	f.Fuzz(func(t *testing.T, msg []byte) {
		c := listing()
		out := c.screen(msg)
		if json.Valid(msg) && !json.Valid(out) {
			t.Errorf("valid %s became invalid %s", msg, out)
		}
	})
}

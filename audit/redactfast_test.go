package audit

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// fastPathRedactors are the redactors the shortcut of Redact is held to
// the full round trip with: the defaults, and one with patterns of a
// configuration, which have no cheap tests before them.
func fastPathRedactors(t testing.TB) []*Redactor {
	def, err := NewRedactor(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	custom, err := NewRedactor([]string{`^x-custom$`, `(?i)^pin$`}, []string{`zz\d+`, `\[redacted\]`, "<"})
	if err != nil {
		t.Fatal(err)
	}
	return []*Redactor{def, custom}
}

// checkFastPath holds Redact to redact, the round trip it spares.
func checkFastPath(t *testing.T, r *Redactor, in string) {
	t.Helper()
	if got, want := r.Redact(json.RawMessage(in)), r.redact(json.RawMessage(in)); got != want {
		t.Fatalf("Redact(%q)\n= %q\nthe round trip gives %q", in, got, want)
	}
}

// redactCases are arguments of the shapes calls carry, and the edges
// where text already written as encoding/json writes it differs by a byte
// from text that is not.
var redactCases = []string{
	`{"text":"hello"}`,
	`{"count":3,"path":"src/main.go","text":"hello"}`,
	`{"path":"src/main.go","text":"hello","count":3}`,
	`{"content":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n","path":"main.go"}`,
	`{"command":"ls -la","cwd":"/tmp","env":{"HOME":"/root"},"timeout_ms":5000}`,
	`{"a":true,"b":false,"c":null,"d":[],"e":{},"f":"","g":[1,"x",{"h":-2}]}`,
	`{"query":"select * from t where a \u003c 3 \u0026\u0026 b \u003e 4"}`,
	`{"query":"select * from t where a < 3 && b > 4"}`,
	`{"s":"\u2028\u2029"}`, "{\"s\":\"\u2028\"}",
	`{"s":"\u00e9"}`, `{"s":"é"}`, `{"s":"\/"}`, `{"s":"\u001f\u0000"}`, `{"s":"\u001F"}`, `{"s":"\ud83d\ude00"}`,
	"{\"s\":\"\xff\xfe\"}", "{\"\xff\":1}", "{\"s\":\"\xed\xa0\x80\"}",
	`{"a":1,"a":2}`, `{"a":{"x":1},"a":"password=hunter2"}`, `{"b":1,"a":2}`, `{"token":"t","a":1,"token":"u"}`,
	`{"path": "src/main.go", "text": "hello", "count": 3}`, `{"z":{"y":[{"b":1,"a":{"d":2,"c":3}}]},"a":"x"}`,
	`{"b":"x","a":"Bearer abcdefghijklmnopqrstuvwxyz"}`, `{"b":{"d":1,"c":2},"a":{"d":1,"c":2}}`,
	`{"n":9007199254740993}`, `{"n":123456789012345678901234567890}`, `{"n":1e2}`, `{"n":1E2}`, `{"n":-0}`,
	`{"n":1.0}`, `{"n":0.1}`, `{"n":1e400}`, `{"n":1e-7}`, `{"n":0.0000001}`, `{"n":1e21}`, `{"n":-1.5e-300}`,
	` {"text":"hello"} `, `{"text": "hello"}`, "[\n1,\n2\n]",
	`"just a string"`, `42`, `true`, `null`, `[]`, `{}`, `""`, ``, `{`, `{"a":}`, `not json password=abc`,
	`{"password":"hunter2"}`, `{"nested":{"api_key":"k"},"x-custom":"v"}`, `{"Pin":"1234"}`,
	`{"pass\u0077ord":"hunter2"}`, `{"a":[{"b":{"session_id":"s"}}]}`,
	`{"command":"curl -H 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz'"}`,
	`{"command":"export KEY=sk-abcdefghijklmnopqrstuv"}`, `{"url":"https://x/?token=abc&q=1"}`,
	`{"note":"s\u003ck-abcdefghijklmnopqrstuv"}`, `{"note":"line\nBearer abcdefghijklmnopqrstuvwxyz\n"}`,
	`{"note":"[redacted]"}`, `{"note":"zz123"}`, `{"zz123":"key, not value"}`,
	`["sk-abcdefghijklmnopqrstuv"]`, `"ghp_abcdefghijklmnopqrstuvwxyz0123"`,
}

// deepCases nest deeper than Redact's shortcut follows, and deeper than
// encoding/json decodes. They are not seeds of the fuzz test, whose
// minimizing of such long text would take most of its time.
var deepCases = []string{
	strings.Repeat(`[`, 2000) + strings.Repeat(`]`, 2000),
	strings.Repeat(`{"a":`, 20000) + `1` + strings.Repeat(`}`, 20000),
}

// TestRedactFastPath: for every case Redact gives what the full round
// trip gives.
func TestRedactFastPath(t *testing.T) {
	for _, r := range fastPathRedactors(t) {
		for _, in := range slices.Concat(redactCases, deepCases) {
			checkFastPath(t, r, in)
		}
	}
}

// TestRedactFastPathTaken: arguments with no secret, already written as
// the round trip writes them, cost Redact the copy it returns and nothing
// more; the round trip costs a dozen allocations.
func TestRedactFastPathTaken(t *testing.T) {
	r := fastPathRedactors(t)[0]
	for _, in := range []string{
		`{"text":"hello"}`,
		`{"count":3,"path":"src/main.go","text":"hello"}`,
		`{"a":true,"b":false,"c":null,"d":[1.5,-2],"e":{"f":"g"}}`,
	} {
		raw := json.RawMessage(in)
		if n := testing.AllocsPerRun(100, func() { r.Redact(raw) }); n > 1 {
			t.Errorf("Redact(%s): %v allocations, want the 1 of its answer", in, n)
		}
	}
}

func FuzzRedactFastPath(f *testing.F) {
	for _, in := range redactCases {
		f.Add(in)
	}
	rs := fastPathRedactors(f)
	f.Fuzz(func(t *testing.T, in string) {
		for _, r := range rs {
			checkFastPath(t, r, in)
		}
	})
}

// BenchmarkRedactFastPath measures Redact against redact, the round trip
// its shortcut spares, on arguments of several shapes, in the same run:
// batches of each in turn. It reports each one's ns and allocations per
// call, and the ratio of their times.
func BenchmarkRedactFastPath(b *testing.B) {
	r, err := NewRedactor(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, args string }{
		{"echo", `{"text":"hello"}`},
		{"flat", `{"count":3,"path":"src/main.go","text":"hello"}`},
		{"unsorted", `{"path":"src/main.go","text":"hello","count":3}`},
		{"file", `{"content":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n","path":"main.go"}`},
		{"nested", `{"command":"ls -la","cwd":"/tmp","env":{"HOME":"/root","LANG":"C"},"timeout_ms":5000}`},
		{"secret", `{"password":"hunter2","user":"me"}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			raw := json.RawMessage(c.args)
			if r.Redact(raw) != r.redact(raw) {
				b.Fatalf("Redact(%s) differs from the round trip", c.args)
			}
			const batch = 64
			var fast, slow time.Duration
			n := 0
			for b.Loop() {
				t0 := time.Now()
				for range batch {
					r.Redact(raw)
				}
				t1 := time.Now()
				for range batch {
					r.redact(raw)
				}
				slow += time.Since(t1)
				fast += t1.Sub(t0)
				n += batch
			}
			b.ReportMetric(float64(fast.Nanoseconds())/float64(n), "redact-ns/call")
			b.ReportMetric(float64(slow.Nanoseconds())/float64(n), "roundtrip-ns/call")
			b.ReportMetric(float64(fast)/float64(slow), "redact/roundtrip")
			b.ReportMetric(testing.AllocsPerRun(100, func() { r.Redact(raw) }), "redact-allocs/call")
			b.ReportMetric(testing.AllocsPerRun(100, func() { r.redact(raw) }), "roundtrip-allocs/call")
		})
	}
}

package audit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSecretKeysRemembered: a name's answer, remembered, is the patterns'
// answer, the second time as the first; a model making up a new name for
// every call fills the memory up to its bound and no further, and a secret
// name met past the bound is still hidden.
func TestSecretKeysRemembered(t *testing.T) {
	r, err := NewRedactor([]string{`^pin$`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"password":"a","Text":"b","pin":"c","API_KEY":"d","path":"e","session-id":"f"}`
	first := r.Redact(json.RawMessage(args))
	second := r.Redact(json.RawMessage(args))
	want := `{"API_KEY":"[redacted]","Text":"b","password":"[redacted]","path":"e","pin":"[redacted]","session-id":"[redacted]"}`
	if first != want || second != want {
		t.Errorf("first  %s\nsecond %s\nwant   %s", first, second, want)
	}
	for i := range maxSeenKeys + 500 {
		r.Redact(json.RawMessage(fmt.Sprintf(`{"k%d":"v"}`, i)))
	}
	if n := r.seenCount.Load(); n > maxSeenKeys {
		t.Errorf("%d names remembered, bound %d", n, maxSeenKeys)
	}
	if got := r.Redact(json.RawMessage(`{"client_secret":"s3"}`)); got != `{"client_secret":"[redacted]"}` {
		t.Errorf("a secret name met past the bound: %s", got)
	}
	long := strings.Repeat("x", maxSeenKey+1) + "token"
	if got := r.Redact(json.RawMessage(`{"` + long + `":"s"}`)); !strings.Contains(got, Redacted) {
		t.Errorf("a long secret name: %s", got)
	}
}

// BenchmarkRedact measures the redaction of a call's small arguments
// against its floor in the same run: decoding them and encoding them
// again, which any redaction that rewrites them pays. It reports
// redact-ns/op, floor-ns/op and their ratio.
func BenchmarkRedact(b *testing.B) {
	r, err := NewRedactor(nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	raw := json.RawMessage(`{"path":"src/main.go","text":"hello","count":3}`)
	var redact, floor time.Duration
	for b.Loop() {
		t0 := time.Now()
		r.Redact(raw)
		t1 := time.Now()
		var v any
		json.Unmarshal(raw, &v)
		json.Marshal(v)
		floor += time.Since(t1)
		redact += t1.Sub(t0)
	}
	b.ReportMetric(float64(redact.Nanoseconds())/float64(b.N), "redact-ns/op")
	b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(redact)/float64(floor), "redact/floor")
}

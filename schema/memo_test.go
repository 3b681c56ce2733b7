package schema

import (
	"encoding/json"
	"runtime"
	"testing"
	"time"
)

// TestCompileSharesIdenticalSchemas: the same bytes compile once while the
// schema is held; other bytes, even equal JSON, compile apart, and a bad
// schema fails every time.
func TestCompileSharesIdenticalSchemas(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"memo_a":{"type":"string"}}}`)
	a := MustCompile(raw)
	b := MustCompile(append(json.RawMessage(nil), raw...))
	if a != b {
		t.Error("the same schema bytes compiled twice while the first schema is held")
	}
	c := MustCompile(json.RawMessage(`{"type":"object", "properties":{"memo_a":{"type":"string"}}}`))
	if c == a {
		t.Error("other bytes gave the memoized schema")
	}
	if err := a.Validate(map[string]any{"memo_a": json.Number("1")}); err == nil {
		t.Error("the shared schema accepts a number for a string")
	}
	bad := json.RawMessage(`{"type":"object","properties":{"n":{"minimum":"x"}}}`)
	for i := range 2 {
		if _, err := Compile(bad); err == nil {
			t.Fatalf("compile %d of a bad schema succeeded", i+1)
		}
	}
	runtime.KeepAlive(a)
}

// TestCompileMemoLetsGo: the memo does not keep a schema alive; once no one
// holds it, its entry goes.
func TestCompileMemoLetsGo(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","properties":{"memo_gone":{"type":"integer"}}}`)
	MustCompile(raw)
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		memo.Lock()
		_, held := memo.m[string(raw)]
		memo.Unlock()
		if !held {
			return
		}
		select {
		case <-deadline:
			t.Fatal("the memo still holds a schema nobody uses after 10 s of collections")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

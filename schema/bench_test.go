package schema

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A small schema of the kind most tools have, and typical valid arguments.
const benchSchema = `{
	"type": "object",
	"required": ["path", "pattern"],
	"additionalProperties": false,
	"properties": {
		"path":    {"type": "string", "description": "Directory to search"},
		"pattern": {"type": "string", "minLength": 1},
		"limit":   {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
		"ignoreCase": {"type": "boolean", "default": false},
		"include": {"type": "array", "items": {"type": "string"}}
	}
}`

var benchArgs = json.RawMessage(`{"path":"src/internal","pattern":"func [A-Z]\\w+\\(","limit":50,"ignoreCase":true,"include":["*.go","*.md"]}`)

func BenchmarkDecodeValidate(b *testing.B) {
	s := MustCompile(json.RawMessage(benchSchema))
	b.ReportAllocs()
	for b.Loop() {
		v, err := Decode(benchArgs)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode compares Decode with encoding/json decoding into any with
// UseNumber, the baseline it replaces.
func BenchmarkDecode(b *testing.B) {
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(benchArgs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := json.NewDecoder(bytes.NewReader(benchArgs))
			d.UseNumber()
			var v any
			if err := d.Decode(&v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkValidate(b *testing.B) {
	s := MustCompile(json.RawMessage(benchSchema))
	v := mustDecode(b, string(benchArgs))
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(v); err != nil {
				b.Fatal(err)
			}
		}
	})
	bad := mustDecode(b, `{"path":1,"limit":0,"extra":true}`)
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Validate(bad); err == nil {
				b.Fatal("validated")
			}
		}
	})
}

func BenchmarkCoerceNoop(b *testing.B) {
	s := MustCompile(json.RawMessage(benchSchema))
	v := mustDecode(b, string(benchArgs))
	b.ReportAllocs()
	for b.Loop() {
		if _, changed := s.Coerce(v); changed {
			b.Fatal("changed")
		}
	}
}

func BenchmarkApplyDefaults(b *testing.B) {
	s := MustCompile(json.RawMessage(benchSchema))
	b.Run("fill", func(b *testing.B) {
		m := mustDecode(b, `{"path":".","pattern":"x"}`).(map[string]any)
		b.ReportAllocs()
		for b.Loop() {
			delete(m, "limit")
			delete(m, "ignoreCase")
			if _, changed := s.ApplyDefaults(m); !changed {
				b.Fatal("nothing filled")
			}
		}
	})
	b.Run("nothing-to-fill", func(b *testing.B) {
		v := mustDecode(b, string(benchArgs))
		b.ReportAllocs()
		for b.Loop() {
			if _, changed := s.ApplyDefaults(v); changed {
				b.Fatal("changed")
			}
		}
	})
}

// BenchmarkPipeline is one call's whole argument handling.
func BenchmarkPipeline(b *testing.B) {
	s := MustCompile(json.RawMessage(benchSchema))
	args := json.RawMessage(`{"path":"src","pattern":"TODO","limit":"20"}`)
	b.ReportAllocs()
	for b.Loop() {
		v, err := Decode(args)
		if err != nil {
			b.Fatal(err)
		}
		v, _ = s.Coerce(v)
		v, _ = s.ApplyDefaults(v)
		if err := s.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

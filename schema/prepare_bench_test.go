package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// toolSchema returns the i-th of a family of distinct schemas of the size an
// MCP server lists: four properties, an enum, bounds, a default.
func toolSchema(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
		`"query":{"type":"string","description":"what tool %d looks for"},`+
		`"limit":{"type":"integer","minimum":1,"maximum":100,"default":10},`+
		`"mode":{"type":"string","enum":["exact","fuzzy"]},`+
		`"path":{"type":"string"}},"required":["query"]}`, i))
}

// BenchmarkSchemaRegistration measures, per distinct schema, each way of
// checking a tool's schema at registration that was considered, so that the
// choice rests on numbers: compile (what registration did, the library's
// compilation and lathe's analysis), the library alone with a compiler per
// schema or one compiler for all, the library without its metaschema check,
// the metaschema check alone, Prepare's check followed by the library
// without the metaschema check (an eager compilation that trusts the
// check), and Prepare (what registration does now; the compilation comes
// at first use).
func BenchmarkSchemaRegistration(b *testing.B) {
	const n = 1000
	raws := make([]json.RawMessage, n)
	for i := range raws {
		raws[i] = toolSchema(i)
	}
	each := func(b *testing.B, f func(raw json.RawMessage)) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f(raws[i%n])
			i++
		}
	}
	b.Run("compile", func(b *testing.B) {
		each(b, func(raw json.RawMessage) {
			if _, err := compile(raw); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("library", func(b *testing.B) {
		each(b, func(raw json.RawMessage) {
			doc, _ := Decode(raw)
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			c.UseLoader(noLoader{})
			if err := c.AddResource(location, doc); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Compile(location); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("library-shared-compiler", func(b *testing.B) {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.UseLoader(noLoader{})
		k := 0
		each(b, func(raw json.RawMessage) {
			doc, _ := Decode(raw)
			loc := fmt.Sprintf("lathe:///%d.json", k)
			k++
			if err := c.AddResource(loc, doc); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Compile(loc); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("library-no-metaschema", func(b *testing.B) {
		// The library skips the metaschema check for documents it takes
		// for its own metaschemas, by their address.
		const loc = "https://json-schema.org/lathe/input.json"
		each(b, func(raw json.RawMessage) {
			doc, _ := Decode(raw)
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			c.UseLoader(noLoader{})
			if err := c.AddResource(loc, doc); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Compile(loc); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("metaschema-only", func(b *testing.B) {
		c := jsonschema.NewCompiler()
		meta, err := c.Compile("https://json-schema.org/draft/2020-12/schema")
		if err != nil {
			b.Fatal(err)
		}
		each(b, func(raw json.RawMessage) {
			doc, _ := Decode(raw)
			if err := meta.Validate(doc); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("check+library-no-metaschema", func(b *testing.B) {
		const loc = "https://json-schema.org/lathe/input.json"
		each(b, func(raw json.RawMessage) {
			doc, _ := Decode(raw)
			if !surelyCompiles(doc) {
				b.Fatal("the check is unsure")
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			c.UseLoader(noLoader{})
			if err := c.AddResource(loc, doc); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Compile(loc); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("prepare", func(b *testing.B) {
		each(b, func(raw json.RawMessage) {
			s, err := prepare(raw)
			if err != nil || s.compiled != nil {
				b.Fatal("not prepared:", err)
			}
		})
	})
	b.Run("decode", func(b *testing.B) {
		each(b, func(raw json.RawMessage) {
			if _, err := Decode(raw); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("decode-compact-nesting", func(b *testing.B) {
		var buf bytes.Buffer
		each(b, func(raw json.RawMessage) {
			if err := checkNesting(raw); err != nil {
				b.Fatal(err)
			}
			if _, err := Decode(raw); err != nil {
				b.Fatal(err)
			}
			buf.Reset()
			json.Compact(&buf, raw)
		})
	})
}

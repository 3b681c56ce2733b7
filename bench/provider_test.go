package bench

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/provider"
	"github.com/lathe-tools/lathe/tool"
	"github.com/lathe-tools/lathe/tools"
)

// providerDefs returns n definitions: the standard tools' and three
// schemas of the kinds upstream servers send (nested objects with optional
// properties, enums and constraints, a map that cannot be strict), in
// turn, each under a name of its own.
func providerDefs(b *testing.B, n int) []tool.Definition {
	std, err := tools.Standard(b.TempDir(), tools.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var kinds []tool.Definition
	for _, t := range std {
		kinds = append(kinds, t.Definition)
	}
	kinds = append(kinds,
		tool.Definition{Description: "Search issues.", InputSchema: json.RawMessage(`{"type":"object","properties":{
			"query":{"type":"string","minLength":1,"description":"What to look for"},
			"state":{"type":"string","enum":["open","closed","all"],"default":"open"},
			"labels":{"type":"array","items":{"type":"string"},"maxItems":10},
			"page":{"type":"integer","minimum":1},
			"sort":{"type":"object","properties":{"by":{"enum":["created","updated"]},"desc":{"type":"boolean"}},"required":["by"]}},
			"required":["query"]}`)},
		tool.Definition{Description: "Run a query.", InputSchema: json.RawMessage(`{"type":"object","$defs":{"cond":{"type":"object",
			"properties":{"field":{"type":"string"},"op":{"enum":["=","<",">"]},"value":{"type":["string","number","null"]}},"required":["field","op","value"]}},
			"properties":{"table":{"type":"string","pattern":"^[a-z_]+$"},"where":{"type":"array","items":{"$ref":"#/$defs/cond"}},"limit":{"type":"integer","maximum":1000}},
			"required":["table"]}`)},
		tool.Definition{Description: "Start a job.", InputSchema: json.RawMessage(`{"type":"object","properties":{
			"command":{"type":"string"},"env":{"type":"object","additionalProperties":{"type":"string"}}},"required":["command"]}`)},
	)
	defs := make([]tool.Definition, n)
	for i := range defs {
		defs[i] = kinds[i%len(kinds)]
		defs[i].Name = fmt.Sprintf("tool_%04d", i)
	}
	return defs
}

// BenchmarkProviderConvert measures converting 1,000 tool definitions to
// each format and printing them as JSON, as `lathe list --format` does,
// against the raw floor measured in the same run: json.Marshal of the same
// definitions as they are. Both are timed in ten alternating rounds so
// that drift in the machine's speed touches both alike. It reports
// ms/1000-defs for each, and their ratio convert/raw.
func BenchmarkProviderConvert(b *testing.B) {
	defs := providerDefs(b, 1000)
	for _, f := range provider.Formats() {
		b.Run(string(f), func(b *testing.B) {
			convert := func() {
				ts, err := provider.Convert(f, defs, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(ts); err != nil {
					b.Fatal(err)
				}
			}
			raw := func() {
				if _, err := json.Marshal(defs); err != nil {
					b.Fatal(err)
				}
			}
			const rounds = 10
			var convTime, rawTime time.Duration
			b.ResetTimer()
			for r := range rounds {
				n := b.N / rounds
				if r < b.N%rounds {
					n++
				}
				start := time.Now()
				for range n {
					convert()
				}
				convTime += time.Since(start)
				start = time.Now()
				for range n {
					raw()
				}
				rawTime += time.Since(start)
			}
			conv := float64(convTime.Nanoseconds()) / float64(b.N) / 1e6
			base := float64(rawTime.Nanoseconds()) / float64(b.N) / 1e6
			b.ReportMetric(conv, "ms/1000-defs")
			b.ReportMetric(base, "raw-ms/1000-defs")
			b.ReportMetric(conv/base, "convert/raw")
		})
	}
}

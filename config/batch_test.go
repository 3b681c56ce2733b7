package config

import (
	"strings"
	"testing"

	"github.com/lathe-tools/lathe/tool"
)

func TestBatchKeys(t *testing.T) {
	cfg, err := Parse("lathe.toml", []byte(`
[batch]
max_concurrency = 8
max_per_server = 2

[tools.grep]
concurrency = "exclusive"
max_concurrency = 3
`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Batch.MaxConcurrency != 8 || cfg.Batch.MaxPerServer != 2 || cfg.Batch.MaxPerTool != 0 {
		t.Errorf("batch = %+v", cfg.Batch)
	}
	tl := tool.Tool{Definition: tool.Definition{Name: "grep"}}
	cfg.Apply(&tl)
	if tl.Concurrency != tool.ConcurrencyExclusive || tl.MaxConcurrency != 3 {
		t.Errorf("tool = %+v", tl)
	}
}

func TestBadConcurrencyNamesItsLine(t *testing.T) {
	_, err := Parse("lathe.toml", []byte("[tools.grep]\nsummary = \"x\"\nconcurrency = \"sometimes\"\n"))
	if err == nil || !strings.Contains(err.Error(), `lathe.toml:3: tools.grep.concurrency: must be "shared" or "exclusive", got "sometimes"`) {
		t.Fatalf("err = %v", err)
	}
}

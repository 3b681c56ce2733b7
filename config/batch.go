package config

import "fmt"

// Batch is the [batch] table: caps on the calls of one batch that run at
// once. Zero means the engine's default for each.
type Batch struct {
	// MaxConcurrency caps the calls of one batch that run at once (default 16).
	MaxConcurrency int `toml:"max_concurrency"`
	// MaxPerTool caps the calls of any one tool that run at once (default: no cap).
	MaxPerTool int `toml:"max_per_tool"`
	// MaxPerServer caps the calls to the tools of one upstream MCP server
	// that run at once (default 4).
	MaxPerServer int `toml:"max_per_server"`
}

// Concurrency is the value of a tool's concurrency key.
type Concurrency string

// validate accepts the values a batch understands; the decoder calls it.
func (c Concurrency) validate() error {
	switch c {
	case "", "shared", "exclusive":
		return nil
	}
	return fmt.Errorf("must be \"shared\" or \"exclusive\", got %q", string(c))
}

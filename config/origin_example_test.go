package config_test

import (
	"fmt"

	"github.com/lathe-tools/lathe/config"
)

// Each value of a merged configuration knows the file and line that set it:
// here the user's timeout survives beneath the workspace's summary.
func ExampleConfig_Settings() {
	user, _ := config.Parse("config.toml", []byte(`[tools.read_file]
timeout = "10s"
summary = "The user's summary"
`))
	ws, _ := config.Parse("lathe.toml", []byte(`
[tools.read_file]
summary = "Read a file from the workspace"
`))
	cfg := &config.Config{}
	cfg.Merge(user)
	cfg.Merge(ws)
	for _, s := range cfg.Settings() {
		fmt.Printf("%s = %q  # %s\n", s.Name(), s.Value, s.Pos)
	}
	_, ok := cfg.Origin("defaults", "timeout")
	fmt.Println("defaults.timeout set:", ok)
	// Output:
	// tools.read_file.timeout = "10s"  # config.toml:2
	// tools.read_file.summary = "Read a file from the workspace"  # lathe.toml:3
	// defaults.timeout set: false
}

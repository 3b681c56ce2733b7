// Package config loads lathe's configuration: the user's file and the
// workspace's lathe.toml, merged key by key, with every problem reported as
// file:line.
//
// [Load] reads the files and [Parse] decodes one:
//
//	cfg, err := config.Load(workspace, explicitPath)
//	if err != nil {
//		return err // e.g. lathe.toml:7: [tools.read_file] unknown key "timout" (did you mean "timeout"?)
//	}
//	for _, t := range tools {
//		if !cfg.Apply(t) { // summary, description, timeout, effects
//			continue // enable = false
//		}
//		register(t)
//	}
//	if err := cfg.Unused(isKnown); err != nil {
//		return err // lathe.toml:12: [tools.raed_file] no tool is named "raed_file"
//	}
//
// [Config.Apply] is also where an upstream MCP server's annotations are
// taken for what they are, its claims: a tool of a server whose table does
// not say trust_annotations = true keeps only the hints that make it look
// more dangerous ([Distrust]), so that the policy and the batch planner,
// which read the registered definition, never run a tool unasked or beside
// others on a server's word alone. Every tool of a server must pass through
// Apply before it is registered, a tool the server adds later included.
//
// A workspace's file is code: it can start programs and widen what is
// allowed. A program that acts on it reads the files with [ReadSources] and
// merges them with [Decide], which applies a workspace file whole only when
// a person has trusted its exact bytes (package trust), and otherwise only
// the part [Config.Split] keeps, the part that can only narrow:
//
//	srcs, err := config.ReadSources(workspace, explicitPath)
//	cfg, pending, err := config.Decide(srcs, func(s *config.Source) (bool, error) {
//		st, _, err := store.Check(workspace, s.Name, s.Data)
//		return st == trust.Trusted, err
//	})
//	for _, p := range pending {
//		report(p.Source.Name, p.Widenings) // what was left out, and why
//	}
//
// Every value of a merged configuration knows where it came from: the file
// whose value won, and the line of its key. [Config.Origin] answers for one
// key and [Config.Settings] lists them all, for a program that shows a
// person what applies and why (lathe config). What trust left out is not
// merged, so it never claims a place.
//
// The keys are the `toml` tags of [Config] and the types below it; the
// project's docs/config.md documents each for users. Adding a key is adding a
// tagged, documented field: a key that no field names is an error, whatever
// table it is in. [Config.Merge] merges every field by reflection, so a new
// field needs no merge code.
//
// # Why go-toml
//
// The package uses github.com/pelletier/go-toml/v2 rather than
// github.com/BurntSushi/toml because only go-toml tells where every key is:
// its parser exposes the byte range of each key and value, from which this
// package finds the line of an unknown key, a value of the wrong type or a bad
// value, in any table. BurntSushi/toml gives a line for syntax and type errors,
// but lists undecoded (unknown) keys without positions and keeps key positions
// private, so a misspelt key could only be reported without its line.
//
// go-toml decodes the document into plain maps first (catching syntax errors
// and TOML's own rules, such as a key defined twice, with their lines); this
// package then decodes those maps into the structs itself, which keeps the
// messages in lathe's words rather than in Go's types.
package config

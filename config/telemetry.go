package config

// Telemetry is the [telemetry] table: what lathe's OpenTelemetry spans may
// carry. Where they go, and whether they go at all, the standard OTEL_*
// environment variables say (docs/telemetry.md).
type Telemetry struct {
	// Arguments = true records each call's arguments in its span, and the
	// subjects of its host operations (paths, URLs, command lines). Off by
	// default.
	Arguments bool `toml:"arguments"`
	// Results = true records each call's result in its span. Off by
	// default.
	Results bool `toml:"results"`
	// MaxBytes caps each recorded argument or result; zero means 4096.
	MaxBytes int `toml:"max_bytes"`
}

//go:build race

package js_test

// raceEnabled says the race detector is on; it makes the engine, C
// translated to Go, many times slower.
const raceEnabled = true

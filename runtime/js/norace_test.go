//go:build !race

package js_test

const raceEnabled = false

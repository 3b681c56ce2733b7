// Package bench measures lathe against the physical floor of each runtime,
// in the same run, and reports the ratio. docs/benchmarks.md says how to run
// the benchmarks and what they measure.
package bench

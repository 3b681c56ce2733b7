//go:build linux && !cgo

package sandbox

// haveInit reports whether this binary carries the sandbox's init, which
// is C: without cgo only the hardened profile is available.
const haveInit = false

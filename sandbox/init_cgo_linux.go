//go:build linux && cgo

package sandbox

// The init is C (init_linux.c), which runs before Go's runtime starts;
// importing C is what compiles it into the binary.

import "C"

// haveInit reports whether this binary carries the sandbox's init.
const haveInit = true

//go:build linux && !amd64

package sandbox

const (
	seccompSupported = false
	auditArch        = 0
	x32Bit           = 0
)

var deniedSyscalls []int

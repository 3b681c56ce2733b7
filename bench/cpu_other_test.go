//go:build !unix

package bench

import "testing"

// cpuCompare is compare where processor time cannot be read per child.
func cpuCompare(b *testing.B, floorOp, engineOp func()) { compare(b, 1, floorOp, engineOp) }

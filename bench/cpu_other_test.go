//go:build !unix

package bench

import "testing"

// cpuCompare is compare where processor time cannot be read per child.
func cpuCompare(b *testing.B, floorOp, engineOp func()) { compare(b, 1, floorOp, engineOp) }

// idleCompare is compare where processor time cannot be read per child.
func idleCompare(b *testing.B, floorOp, engineOp func()) { compare(b, 1, floorOp, engineOp) }

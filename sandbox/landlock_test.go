//go:build linux

package sandbox

import "testing"

func TestLandlockABI(t *testing.T) {
	abi := landlockABI()
	t.Logf("Landlock ABI %d", abi)
	if abi == 0 {
		t.Skip("this kernel has no Landlock; the standard profile relies on its namespaces alone")
	}
}

//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
)

// wrap supports only the dev profile, with no limits, outside Linux.
func wrap(c Config, cmd *exec.Cmd) (func(), error) {
	if c.Profile == Dev {
		return func() {}, nil
	}
	return func() {}, fmt.Errorf("sandbox: %w: the %s profile needs Linux", ErrUnavailable, c.Profile)
}

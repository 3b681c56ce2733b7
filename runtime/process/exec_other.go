//go:build !unix

package process

import (
	"context"
	"errors"
	"os/exec"
	"time"
)

type spawnSpec struct {
	path   string
	argv   []string
	dir    string
	env    []string
	stdin  []byte
	maxOut int
	grace  time.Duration

	sandbox func(*exec.Cmd) (func(), error)
}

// spawn is not implemented: process groups and signals are Unix's.
func spawn(ctx context.Context, s spawnSpec) (*result, error) {
	return &result{}, errors.New("the process runtime needs a Unix system")
}

//go:build !unix

package tools

import (
	"errors"

	"github.com/lathe-tools/lathe/tool"
)

// RunCommand is the name of the tool that runs a shell command line.
const RunCommand = "run_command"

func (s *set) runTool() (tool.Tool, error) {
	return tool.Tool{}, errors.New("run_command needs a Unix system")
}

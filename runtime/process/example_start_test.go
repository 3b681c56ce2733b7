//go:build unix

package process_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/lathe-tools/lathe/runtime/process"
)

// A runtime that starts processes of its own starts them as lathe does:
// in a session of their own, supervised, with the minimal environment, and
// stopped with SIGTERM and then, past the grace period, killed with all
// they started.
func ExampleStart() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	os.Setenv("EXAMPLE_TOKEN", "s3cret") // in lathe's environment, not listed for the child
	defer os.Unsetenv("EXAMPLE_TOKEN")
	cmd := exec.Command("/bin/sh", "-c", `echo "token: [$EXAMPLE_TOKEN]"; [ -n "$PATH" ] && echo "PATH is set"`)
	var out bytes.Buffer
	cmd.Stdout = &out
	p, err := process.Start(ctx, cmd, process.StartOptions{GracePeriod: time.Second})
	if err != nil {
		panic(err)
	}
	state, _ := p.Wait()
	fmt.Print(out.String())
	fmt.Println("exit:", state.ExitCode())
	// Output:
	// token: []
	// PATH is set
	// exit: 0
}

//go:build linux

package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/mcp"
)

// liveProcesses returns the live processes (not zombies) whose command line
// contains want.
func liveProcesses(want string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), want) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestServerDescendantsDieWithPool: an MCP server that ignores SIGTERM and
// the end of its input, with a descendant in its process group and one in
// a session of its own, leaves nothing running once the pool is closed.
func TestServerDescendantsDieWithPool(t *testing.T) {
	argv, env := self(t, "env")
	marker := strconv.Itoa(700000 + os.Getpid()%10000*10)
	find := func() []int { return liveProcesses("sleep\x00" + marker + "\x00") }
	defer func() {
		for _, pid := range find() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}()
	// The shell serves through the test binary, then outlives the session,
	// deaf to SIGTERM as its children are (an ignored signal stays ignored
	// across exec).
	script := fmt.Sprintf(`trap '' TERM; setsid sleep %[1]s & sleep %[1]s & "$@"; sleep %[1]s`, marker)
	cmd := append([]string{"/bin/sh", "-c", script, "server"}, argv...)
	e := lathe.New(lathe.Options{})
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := mcp.Open(ctx, e, []mcp.Config{{Name: "s", Command: cmd, Env: env}}, mcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(find()) < 2 {
		if time.Now().After(deadline) {
			p.Close()
			t.Fatalf("the server's descendants never started (saw %v)", find())
		}
		time.Sleep(20 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("closing the pool hung on a server that ignores SIGTERM")
	}
	deadline = time.Now().Add(2 * time.Second)
	for len(find()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v outlived the closed pool", find())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

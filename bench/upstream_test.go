package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/internal/jsonscan"
	"github.com/lathe-tools/lathe/runtime/mcp"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkUpstream measures what an upstream MCP server over stdio (the
// gateway benchmark's echo server) spends per call behind lathe's pool,
// with 16 calls in flight, against the same server behind the least a
// client can do: a pipe that writes each request and a reader that hands
// each answer to its caller ("pipe"), the server in this process's session.
// A third side is that pipe's server started in a session of its own
// ("pipe-session"), as lathe starts every process: where the kernel shares
// the processor between sessions (autogroup), that server is a scheduling
// group of its own, and this side tells its part from the pool's.
//
// The sides take turns, in rotation, over ten rounds. Each reports its
// calls per second, the server's processor time and context switches per
// call (with lathe's init, for the pool), and this process's processor time
// per call; the ratios compare the pool and the session with the pipe.
func BenchmarkUpstream(b *testing.B) {
	const inFlight = 16
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}

	type side struct {
		name  string
		call  func() error
		pids  []int // the server's processes
		wall  time.Duration
		cpu   time.Duration
		sw    int
		self  time.Duration
		calls int
	}
	var sides []*side
	for _, name := range []string{"pipe", "pipe-session"} {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), upstreamEnv+"=echo")
		if name == "pipe-session" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		p, err := startPipe(cmd)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		defer p.close()
		sides = append(sides, &side{name: name, call: p.call, pids: []int{cmd.Process.Pid}})
	}
	before := descendants(os.Getpid())
	e := lathe.New(lathe.Options{})
	defer e.Close()
	pool, err := mcp.Open(ctx, e, []mcp.Config{{Name: "up", Command: []string{self}, Env: map[string]string{upstreamEnv: "echo"}}}, mcp.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var poolPids []int
	for _, pid := range descendants(os.Getpid()) {
		if !slices.Contains(before, pid) {
			poolPids = append(poolPids, pid)
		}
	}
	args := json.RawMessage(`{"text":"hello"}`)
	sides = append(sides, &side{name: "pool", pids: poolPids, call: func() error {
		out := e.Call(ctx, &tool.Call{Name: "up__echo", Arguments: args})
		if out.Result == nil || out.Result.IsError {
			return fmt.Errorf("the pool's call: %+v", out)
		}
		return nil
	}})

	for _, s := range sides {
		for range 20 { // the first calls pay for set-up on every side
			if err := s.call(); err != nil {
				b.Fatal(err)
			}
		}
	}
	const rounds = 10
	per := max(inFlight, b.N/rounds)
	b.ResetTimer()
	for r := range rounds {
		for i := range sides {
			s := sides[(r+i)%len(sides)]
			runtime.GC()
			c0, w0, m0 := cpuOf(b, s.pids), switchesOf(s.pids), selfCPU()
			t0 := time.Now()
			var left atomic.Int64
			left.Store(int64(per))
			var wg sync.WaitGroup
			var failed atomic.Value
			for range inFlight {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := s.call(); err != nil {
							failed.Store(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
			s.wall += time.Since(t0)
			s.cpu += cpuOf(b, s.pids) - c0
			s.sw += switchesOf(s.pids) - w0
			s.self += selfCPU() - m0
			s.calls += per
		}
	}
	b.StopTimer()
	rate := func(s *side) float64 { return float64(s.calls) / s.wall.Seconds() }
	upCPU := func(s *side) float64 { return float64(s.cpu.Microseconds()) / float64(s.calls) }
	for _, s := range sides {
		n := float64(s.calls)
		b.ReportMetric(rate(s), s.name+"-calls/s")
		b.ReportMetric(upCPU(s), s.name+"-upstream-cpu-µs/call")
		b.ReportMetric(float64(s.sw)/n, s.name+"-upstream-switches/call")
		b.ReportMetric(float64(s.self.Microseconds())/n, s.name+"-client-cpu-µs/call")
	}
	pipe := sides[0]
	for _, s := range sides[1:] {
		b.ReportMetric(upCPU(s)/upCPU(pipe), s.name+"/pipe-upstream-cpu")
		b.ReportMetric(rate(s)/rate(pipe), s.name+"/pipe-calls/s")
	}
}

// pipeClient is the least an MCP client over stdio can do: each caller
// writes its request whole and waits; one reader hands each answer to the
// caller of its id, and when the server's output ends, ends every wait.
type pipeClient struct {
	in   io.WriteCloser
	wmu  sync.Mutex // one request is written at a time
	mu   sync.Mutex
	next int64
	wait map[int64]chan bool // true once answered; closed when the output ends
	done bool                // the server's output has ended
}

// startPipe starts cmd, an MCP server over stdio, and initializes it.
func startPipe(cmd *exec.Cmd) (*pipeClient, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go cmd.Wait()
	c := &pipeClient{in: in, wait: map[int64]chan bool{}}
	r := bufio.NewReader(out)
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`+"\n"); err != nil {
		return nil, err
	}
	if _, err := r.ReadBytes('\n'); err != nil {
		return nil, fmt.Errorf("initializing: %w", err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return nil, err
	}
	go func() {
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				break
			}
			id, ok := answerID(line)
			if !ok {
				continue
			}
			c.mu.Lock()
			ch := c.wait[id]
			delete(c.wait, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- true
			}
		}
		c.mu.Lock()
		c.done = true
		for id, ch := range c.wait {
			close(ch)
			delete(c.wait, id)
		}
		c.mu.Unlock()
	}()
	return c, nil
}

// answerID reads the id of an answer.
func answerID(line []byte) (int64, bool) {
	var raw []byte
	err := jsonscan.Members(line, jsonscan.SkipSpace(line, 0), func(key string, vs, ve int) {
		if key == "id" {
			raw = line[vs:ve]
		}
	})
	if err != nil || raw == nil {
		return 0, false
	}
	id, err := strconv.ParseInt(string(raw), 10, 64)
	return id, err == nil
}

func (c *pipeClient) call() error {
	ch := make(chan bool, 1)
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return errors.New("the server's output has ended")
	}
	c.next++
	id := c.next
	c.wait[id] = ch
	c.mu.Unlock()
	msg := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`+"\n", id)
	c.wmu.Lock()
	_, err := c.in.Write(msg)
	c.wmu.Unlock()
	if err != nil {
		return err
	}
	if !<-ch {
		return fmt.Errorf("the server's output ended before its answer to call %d", id)
	}
	return nil
}

func (c *pipeClient) close() { c.in.Close() }

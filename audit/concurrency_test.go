package audit_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// TestEveryConcurrentCallRecorded runs 2,000 calls at once through the
// audit middleware: each must leave exactly one record, finished, and no call
// may be refused for want of a record.
func TestEveryConcurrentCallRecorded(t *testing.T) {
	s, _ := open(t)
	e := newEngine(s, &policy.Policy{})
	defer e.Close()
	const n = 2000
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			out := e.Call(ctx, &tool.Call{ID: strconv.Itoa(i), Name: "look", Arguments: json.RawMessage(`{"path":"x"}`)})
			if out.Result == nil || out.Result.IsError {
				errs <- fmt.Sprintf("call %d: %+v", i, out.Result)
			}
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for msg := range errs {
		if failed < 3 {
			t.Error(msg)
		}
		failed++
	}
	if failed > 0 {
		t.Errorf("%d of %d calls failed", failed, n)
	}
	if ctx.Err() != nil {
		t.Fatal("the calls did not end within two minutes")
	}
	checkRecords(t, s, n)
}

// checkRecords asserts that s holds exactly n records, each finished with
// outcome ok, with n distinct call ids.
func checkRecords(t *testing.T, s *audit.Store, n int) {
	t.Helper()
	recs, err := s.List(context.Background(), audit.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	bad := 0
	for _, r := range recs {
		ids[r.CallID] = true
		if r.Status != audit.StatusDone || r.Outcome != "ok" {
			if bad < 3 {
				t.Errorf("record not finished: %+v", r)
			}
			bad++
		}
	}
	if len(recs) != n || len(ids) != n || bad != 0 {
		t.Fatalf("%d records (%d distinct calls, %d unfinished); want %d, all finished", len(recs), len(ids), bad, n)
	}
}

// TestTwoProcessesRecordEverything writes from this process and from a
// second one (this test binary again, see TestMain) into one database at
// the same time, as `lathe serve` and `lathe call` on one workspace do.
func TestTwoProcessesRecordEverything(t *testing.T) {
	s, path := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const each = 2000
	p := startWriter(t, ctx, path, each)
	e := newEngine(s, &policy.Policy{})
	defer e.Close()
	p.ready(t)
	p.start()
	failed := concurrentCalls(ctx, e, "here", each)
	p.wait(t)
	if failed > 0 {
		t.Errorf("%d calls failed in this process", failed)
	}
	checkRecords(t, s, 2*each)
}

// TestProcessesCreateDatabaseTogether: several processes open a database
// that does not exist yet at the same moment (creating it, switching it to
// WAL) and write at once; every call is recorded.
func TestProcessesCreateDatabaseTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".lathe", "lathe.db")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const procs, each = 4, 300
	var ps []*writerProc
	for range procs {
		ps = append(ps, startWriter(t, ctx, path, each))
	}
	for _, p := range ps {
		p.ready(t)
	}
	for _, p := range ps {
		p.start()
	}
	for _, p := range ps {
		p.wait(t)
	}
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkRecords(t, s, procs*each)
}

// writerProc is a second process writing calls (see writer): it says
// "ready" once its store is open and starts on "go", so that the processes
// write at the same time.
type writerProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	errb   *syncBuf
}

func startWriter(t *testing.T, ctx context.Context, path string, calls int) *writerProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AUDIT_WRITER_DB="+path, "AUDIT_WRITER_CALLS="+strconv.Itoa(calls))
	p := &writerProc{cmd: cmd, errb: &syncBuf{}}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *writerProc) ready(t *testing.T) {
	t.Helper()
	ready := make([]byte, len("ready\n"))
	if _, err := io.ReadFull(p.stdout, ready); err != nil || string(ready) != "ready\n" {
		t.Fatalf("a writer process did not get ready (killed at the test's deadline if it hung): %q %v: %s",
			ready, err, p.errb)
	}
}

func (p *writerProc) start() { io.WriteString(p.stdin, "go\n") }

func (p *writerProc) wait(t *testing.T) {
	t.Helper()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("a writer process: %v (killed at the test's deadline if it hung): %s", err, p.errb)
	}
}

// writer is the process of startWriter.
func writer(path string, n int) {
	s, err := audit.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	e := newEngine(s, &policy.Policy{})
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(2)
	}
	failed := concurrentCalls(context.Background(), e, fmt.Sprintf("there%d-", os.Getpid()), n)
	e.Close()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "%d calls failed\n", failed)
		os.Exit(1)
	}
	os.Exit(0)
}

type syncBuf struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}

// concurrentCalls makes n calls of look at once, their ids prefixed, and
// returns how many failed.
func concurrentCalls(ctx context.Context, e interface {
	Call(context.Context, *tool.Call) *tool.Outcome
}, prefix string, n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	failed := 0
	for i := range n {
		wg.Go(func() {
			out := e.Call(ctx, &tool.Call{ID: prefix + strconv.Itoa(i), Name: "look", Arguments: json.RawMessage(`{"path":"x"}`)})
			if out.Result == nil || out.Result.IsError {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// TestCloseFinishesCallsInFlight closes the store while a call runs and is
// then cancelled, as lathe serve does on shutdown: the call's record must be
// finished, not left started.
func TestCloseFinishesCallsInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(s, &policy.Policy{})
	defer e.Close()
	running := make(chan struct{})
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "wait", Annotations: tool.Annotations{ReadOnlyHint: true}},
		func(ctx context.Context, in in) (string, error) {
			close(running)
			<-ctx.Done()
			return "", ctx.Err()
		})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	called := make(chan *tool.Outcome, 1)
	go func() {
		called <- e.Call(ctx, &tool.Call{ID: "w", Name: "wait", Arguments: json.RawMessage(`{"path":"x"}`)})
	}()
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not start")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung")
	}
	<-called
	s2, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	recs, err := s2.List(context.Background(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Status != audit.StatusDone || recs[0].Outcome != string(tool.KindCancelled) {
		t.Fatalf("records: %+v", recs)
	}
	if _, err := s.Start(context.Background(), &audit.Record{Tool: "late"}); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("a write after Close: %v, want ErrClosed", err)
	}
}

// TestWritesRacingClose writes from many goroutines while the store closes:
// a write run on its caller's goroutine and one queued to the writer alike
// either returns ErrClosed or is in the database, never lost, and Close
// waits for the ones under way.
func TestWritesRacingClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lathe.db")
	s, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for {
				_, err := s.Start(context.Background(), &audit.Record{Tool: "race", Time: time.Now()})
				if errors.Is(err, audit.ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				ok.Add(1)
			}
		})
	}
	time.Sleep(100 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung while writes ran")
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("writes still running 30s after Close")
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s2, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	recs, err := s2.List(context.Background(), audit.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if ok.Load() == 0 || int64(len(recs)) != ok.Load() {
		t.Fatalf("%d writes returned without error, the database holds %d records", ok.Load(), len(recs))
	}
}

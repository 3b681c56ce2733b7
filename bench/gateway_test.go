//go:build linux

package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lathe-tools/lathe/audit"
)

// upstreamEnv, set to "echo" in the environment of this test binary, makes
// it an upstream MCP server over stdio with one tool, echo, instead of
// running the benchmarks: the server every side of BenchmarkGateway calls.
const upstreamEnv = "LATHE_BENCH_UPSTREAM"

// proxySrcEnv names the variable that points BenchmarkGateway at the source
// of TBXark/mcp-proxy: a directory holding its module, or a bare git
// repository whose HEAD is built. Without it the module is fetched into the
// Go module cache at proxyVersion.
const proxySrcEnv = "LATHE_MCP_PROXY_SRC"

// latheBinEnv names the variable that gives BenchmarkGateway a lathe
// binary to measure instead of the one it builds from this module: to
// compare two versions of lathe in one run of the machine.
const latheBinEnv = "LATHE_BENCH_LATHE"

// latheBaseEnv names the variable that adds a fifth side to
// BenchmarkGateway, lathe-base: another lathe binary (an earlier version,
// say) measured in the same rounds as lathe, with lathe's ratio to it. Two
// versions of lathe compared in one run see the same machine, where runs
// minutes apart on a shared machine do not.
const latheBaseEnv = "LATHE_BENCH_BASE"

// baseAuditEnv names the variable that, set to "off", runs lathe-base with
// its audit log off ([audit] enable = false): the same binary as lathe, so
// measured, says what the audit log costs the gateway in the same rounds.
const baseAuditEnv = "LATHE_BENCH_BASE_AUDIT"

// sharedSessionEnv names the variable that, set to 1, starts the gateways
// of BenchmarkGateway in the benchmark's own session, with their clients,
// instead of each in a session of its own.
const sharedSessionEnv = "LATHE_BENCH_SHARED_SESSION"

// benchToken is the bearer token the clients of both lathe and mcp-proxy
// send, and both gateways check: lathe's HTTP face takes no call without
// one, and a gateway left open to every local user would not be the same
// work.
const benchToken = "bench-token"

// proxyModule and proxyVersion are the mcp-proxy that BenchmarkGateway
// builds when LATHE_MCP_PROXY_SRC is not set.
const (
	proxyModule  = "github.com/tbxark/mcp-proxy"
	proxyVersion = "v0.43.2"
)

func TestMain(m *testing.M) {
	switch os.Getenv(upstreamEnv) {
	case "echo":
		serveEcho()
		return
	case "sdk-proxy":
		serveSDKProxy()
		return
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text string `json:"text"`
}

// serveEcho is the upstream: a go-sdk server over stdio whose echo tool
// returns its text.
func serveEcho() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "echo", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Return the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// serveSDKProxy is the floor of a gateway built on the go-sdk: a go-sdk
// server over streamable HTTP whose echo tool passes each call on to a
// go-sdk client session of the upstream over stdio, and nothing else. It
// prints its endpoint on standard error. It runs with lathe serve's
// collector target (set here, not with GOGC, which the upstream would
// inherit), so that what lies between the two is lathe's own work.
func serveSDKProxy() {
	debug.SetGCPercent(400)
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), upstreamEnv+"=echo")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "sdk-proxy"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "sdk-proxy", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: req.Params.Arguments})
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "serving MCP at http://%s/mcp\n", ln.Addr())
	err = http.Serve(ln, sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// A gatewaySide is one way to reach the upstream's echo tool: directly, or
// through a gateway process.
type gatewaySide struct {
	name string
	// tool is the echo tool's name on this side.
	tool string
	// connect opens one client session.
	connect func(ctx context.Context) (*sdk.ClientSession, error)
	// proc is the gateway's process, whose processor time is read; nil
	// for the upstream called directly.
	proc *os.Process
	// check, if not nil, says after the calls whether the side ran as it
	// should have.
	check func(calls int) error

	lat   []time.Duration
	wall  time.Duration
	cpu   time.Duration
	up    time.Duration // the upstream's processor time
	self  time.Duration // the clients' processor time (this process)
	sw    int           // the upstream's context switches
	calls int
}

// BenchmarkGateway calls the echo tool of an upstream MCP server over stdio
// (this test binary, re-run as a go-sdk server) four ways: through
// `lathe serve --http` (the lathe binary, built from this module, with the
// audit log on and a policy rule allowing the call); through TBXark/mcp-proxy
// (built from its source, see LATHE_MCP_PROXY_SRC); through sdk-proxy, the
// floor of any gateway built on the go-sdk (serveSDKProxy); and directly
// with the go-sdk client over stdio. The clients are go-sdk clients in this
// process, over streamable HTTP for the gateways; with clients=16 there are
// 16 sessions calling at once, and directly 16 goroutines sharing the one
// stdio session, as a gateway shares its upstream. The sides take turns in
// ten rounds, so that drift in the machine's speed touches all alike; each
// round starts with the next side, and each turn on a collected heap in
// this process, so that no side pays for the garbage of the one before.
// Both gateways check the same bearer token.
//
// Each side reports p50 and p99 latency (µs) and calls/s; each gateway its
// processor time per call (user and system, its own process), its
// upstream's, the clients' (this process), and the upstream's context
// switches per call. The ratios are lathe's to the others'. When mcp-proxy cannot
// be built (no source given, and the module cannot be fetched), it is left
// out and each sub-benchmark says why.
func BenchmarkGateway(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := b.TempDir()
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}

	bin := os.Getenv(latheBinEnv)
	if bin == "" {
		bin = filepath.Join(dir, "lathe")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/lathe-tools/lathe/cmd/lathe")
		if out, err := build.CombinedOutput(); err != nil {
			b.Fatalf("building lathe: %v\n%s", err, out)
		}
	}
	lathe, err := startLathe(b, "lathe", bin, filepath.Join(dir, "lathe-run"), self, true)
	if err != nil {
		b.Fatal(err)
	}
	var base *gatewaySide
	if bin := os.Getenv(latheBaseEnv); bin != "" {
		audited := true
		switch v := os.Getenv(baseAuditEnv); v {
		case "", "on":
		case "off":
			audited = false
		default:
			b.Fatalf("%s=%q: want on or off", baseAuditEnv, v)
		}
		if base, err = startLathe(b, "lathe-base", bin, filepath.Join(dir, "base-run"), self, audited); err != nil {
			b.Fatal(err)
		}
	}
	proxy, why := startProxy(ctx, b, dir, self)
	direct := &gatewaySide{name: "direct", tool: "echo", connect: func(ctx context.Context) (*sdk.ClientSession, error) {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), upstreamEnv+"=echo")
		return sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	}}
	floor := exec.Command(self)
	floor.Env = append(os.Environ(), upstreamEnv+"=sdk-proxy")
	floorURL, err := startServer(b, floor, "the go-sdk proxy", serving)
	if err != nil {
		b.Fatal(err)
	}
	sides := []*gatewaySide{direct, lathe, httpSide("sdk-proxy", "echo", floorURL, httpClient("", ""), floor.Process)}
	if proxy != nil {
		sides = append(sides, proxy)
	}
	if base != nil {
		sides = append(sides, base)
	}

	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			runGateway(ctx, b, sides, clients)
			if proxy == nil {
				b.Logf("mcp-proxy left out: %s", why)
			}
		})
	}
}

func runGateway(ctx context.Context, b *testing.B, sides []*gatewaySide, clients int) {
	sessions := make(map[*gatewaySide][]*sdk.ClientSession)
	for _, s := range sides {
		s.lat, s.wall, s.cpu, s.up, s.self, s.sw, s.calls = s.lat[:0], 0, 0, 0, 0, 0, 0
		n := clients
		if s.proc == nil {
			n = 1 // the upstream has one stdio client: the calls share its session
		}
		for range n {
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			cs, err := s.connect(cctx)
			cancel()
			if err != nil {
				b.Fatalf("%s: connecting: %v", s.name, err)
			}
			defer cs.Close()
			sessions[s] = append(sessions[s], cs)
		}
	}
	// Params of their own for each call: a go-sdk client of MCP 2026-07-28
	// writes into the params' _meta, which the calls of other clients
	// would share, and race on.
	args := map[string]any{"text": "hello"}
	params := func(s *gatewaySide) *sdk.CallToolParams {
		return &sdk.CallToolParams{Name: s.tool, Arguments: args}
	}
	// call makes one call and times it; it runs on the clients' goroutines,
	// so it returns what went wrong rather than failing the benchmark.
	call := func(s *gatewaySide, cs *sdk.ClientSession, p *sdk.CallToolParams) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		t0 := time.Now()
		r, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: p.Name, Arguments: p.Arguments})
		d := time.Since(t0)
		if err != nil {
			return 0, fmt.Errorf("%s: calling echo: %v", s.name, err)
		}
		if r.IsError || len(r.Content) != 1 {
			return 0, fmt.Errorf("%s: echo answered %+v", s.name, r.Content)
		}
		if t, ok := r.Content[0].(*sdk.TextContent); !ok || t.Text != "hello" {
			return 0, fmt.Errorf("%s: echo answered %+v", s.name, r.Content[0])
		}
		return d, nil
	}
	// Warm every session: the first calls pay for lazy set-up on every side.
	for _, s := range sides {
		p := params(s)
		for _, cs := range sessions[s] {
			for range 5 {
				if _, err := call(s, cs, p); err != nil {
					b.Fatal(err)
				}
			}
		}
	}

	const rounds = 10
	perClient := max(1, b.N/(rounds*clients))
	nRounds := rounds
	if b.N < clients {
		nRounds = 1
	}
	b.ResetTimer()
	for round := range nRounds {
		// Each round starts with the next side, so that no side always
		// follows the same one; and each turn starts on a collected heap,
		// so that the garbage of one side's clients (all in this process)
		// is not collected in the next side's time.
		for i := range sides {
			s := sides[(round+i)%len(sides)]
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
			p := params(s)
			cpu0, up0, self0, sw0 := procCPU(b, s.proc), childrenCPU(b, s.proc), selfCPU(), childrenSwitches(s.proc)
			lats := make([][]time.Duration, clients)
			errs := make([]error, clients)
			var wg sync.WaitGroup
			t0 := time.Now()
			for i := range clients {
				cs := sessions[s][i%len(sessions[s])]
				wg.Go(func() {
					for range perClient {
						d, err := call(s, cs, p)
						if err != nil {
							errs[i] = err
							return
						}
						lats[i] = append(lats[i], d)
					}
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				b.Fatal(err)
			}
			s.wall += time.Since(t0)
			s.cpu += procCPU(b, s.proc) - cpu0
			s.up += childrenCPU(b, s.proc) - up0
			s.self += selfCPU() - self0
			s.sw += childrenSwitches(s.proc) - sw0
			for _, l := range lats {
				s.lat = append(s.lat, l...)
				s.calls += len(l)
			}
		}
	}
	b.StopTimer()
	for _, s := range sides {
		if s.check != nil {
			if err := s.check(s.calls); err != nil {
				b.Fatalf("%s: %v", s.name, err)
			}
		}
	}

	rate := func(s *gatewaySide) float64 { return float64(s.calls) / s.wall.Seconds() }
	bySide := map[string]*gatewaySide{}
	for _, s := range sides {
		bySide[s.name] = s
		slices.Sort(s.lat)
		b.ReportMetric(float64(s.lat[len(s.lat)/2].Microseconds()), s.name+"-p50-µs")
		b.ReportMetric(float64(s.lat[len(s.lat)*99/100].Microseconds()), s.name+"-p99-µs")
		b.ReportMetric(rate(s), s.name+"-calls/s")
		if s.proc != nil {
			b.ReportMetric(float64(s.cpu.Microseconds())/float64(s.calls), s.name+"-cpu-µs/call")
			b.ReportMetric(float64(s.up.Microseconds())/float64(s.calls), s.name+"-upstream-cpu-µs/call")
			b.ReportMetric(peakRSS(s.proc), s.name+"-peak-rss-MB")
			b.ReportMetric(float64(s.self.Microseconds())/float64(s.calls), s.name+"-clients-cpu-µs/call")
			b.ReportMetric(float64(s.sw)/float64(s.calls), s.name+"-upstream-switches/call")
		}
	}
	l := bySide["lathe"]
	b.ReportMetric(rate(l)/rate(bySide["direct"]), "lathe/direct-calls/s")
	f := bySide["sdk-proxy"]
	b.ReportMetric(rate(l)/rate(f), "lathe/sdk-proxy-calls/s")
	cpuRatio := func(o *gatewaySide) {
		// The clock ticks of /proc are 10 ms: a run of a few calls may
		// see none.
		if o.cpu > 0 {
			b.ReportMetric((float64(l.cpu)/float64(l.calls))/(float64(o.cpu)/float64(o.calls)), "lathe/"+o.name+"-cpu")
		}
	}
	cpuRatio(f)
	if p := bySide["mcp-proxy"]; p != nil {
		b.ReportMetric(rate(l)/rate(p), "lathe/mcp-proxy-calls/s")
		cpuRatio(p)
	}
	if p := bySide["lathe-base"]; p != nil {
		b.ReportMetric(rate(l)/rate(p), "lathe/lathe-base-calls/s")
		cpuRatio(p)
	}
}

// procCPU returns the processor time, user and system, that p has used so
// far (all its threads, not its children), or 0 for a nil p.
func procCPU(b *testing.B, p *os.Process) time.Duration {
	if p == nil {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
	if err != nil {
		return 0 // the process has ended: a helper of the gateway's
	}
	// The command name, in parentheses, may hold spaces: the fields are
	// counted from after its closing parenthesis. utime and stime are the
	// 14th and 15th fields, in clock ticks of 1/100 s on Linux.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		b.Fatalf("reading the gateway's processor time from %q: %v", s, err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// peakRSS returns the most memory p has held so far (its peak resident set,
// VmHWM) in megabytes, or 0 when it cannot be read.
func peakRSS(p *os.Process) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// childrenSwitches returns the context switches, voluntary and not, that
// the threads of the running descendants of p have made so far, or 0 for a
// nil p. An upstream that finds no request waiting each time it finishes
// one sleeps and is woken once per call; one that finds several does not.
func childrenSwitches(p *os.Process) int {
	if p == nil {
		return 0
	}
	return switchesOf(descendants(p.Pid))
}

// switchesOf returns the context switches, voluntary and not, that the
// threads of the processes pids have made so far (none for those that
// have ended).
func switchesOf(pids []int) int {
	n := 0
	for _, pid := range pids {
		threads, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		for _, t := range threads {
			data, err := os.ReadFile(t)
			if err != nil {
				continue // the thread has ended
			}
			for line := range strings.Lines(string(data)) {
				if _, v, ok := strings.Cut(line, "voluntary_ctxt_switches:"); ok {
					c, _ := strconv.Atoi(strings.TrimSpace(v))
					n += c
				}
			}
		}
	}
	return n
}

// descendants returns the pids of the running descendants of pid.
func descendants(pid int) []int {
	var pids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // the thread has ended
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				pids = append(pids, c)
				pids = append(pids, descendants(c)...)
			}
		}
	}
	return pids
}

// childrenCPU returns the processor time that the running descendants of
// p (the upstream server a gateway started, and a supervisor between them)
// have used so far, or 0 for a nil p.
func childrenCPU(b *testing.B, p *os.Process) time.Duration {
	if p == nil {
		return 0
	}
	return cpuOf(b, descendants(p.Pid))
}

// cpuOf returns the processor time the processes pids have used so far
// (see procCPU).
func cpuOf(b *testing.B, pids []int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		sum += procCPU(b, &os.Process{Pid: pid})
	}
	return sum
}

// httpClient keeps enough idle connections for 16 clients, so that no
// side pays for new connections, and adds header to every request.
func httpClient(header, value string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		if header != "" {
			r = r.Clone(r.Context())
			r.Header.Set(header, value)
		}
		return t.RoundTrip(r)
	})}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func httpSide(name, tool, endpoint string, hc *http.Client, proc *os.Process) *gatewaySide {
	version := cmp.Or(os.Getenv(clientVersionEnv), "2025-11-25")
	return &gatewaySide{name: name, tool: tool, proc: proc, connect: func(ctx context.Context) (*sdk.ClientSession, error) {
		return sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true},
			&sdk.ClientSessionOptions{ProtocolVersion: version})
	}}
}

// clientVersionEnv names the variable that sets the MCP version the HTTP
// clients of BenchmarkGateway ask for; 2025-11-25 by default, which every
// side speaks (mcp-proxy and the go-sdk's stateful handler speak nothing
// later), so that the clients' work is the same on every side. With
// 2026-07-28 lathe is spoken to in that version and the others fall back.
const clientVersionEnv = "LATHE_BENCH_CLIENT_VERSION"

// startLathe serves the upstream over HTTP with the lathe binary bin, as
// the side called name, in a workspace and configuration of its own under
// dir. The configuration is the user's file (which needs no trust), with
// the audit log at its default place in the workspace, on unless audited
// is false.
func startLathe(b *testing.B, name, bin, dir, self string, audited bool) (*gatewaySide, error) {
	ws, cfg, state := filepath.Join(dir, "ws"), filepath.Join(dir, "config"), filepath.Join(dir, "state")
	for _, d := range []string{ws, filepath.Join(cfg, "lathe"), state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	conf := fmt.Sprintf(`[mcp.up]
command = [%q]
env = { %s = "echo" }

[[policy.rules]]
tool = "up__echo"
approval = "allow"
`, self, upstreamEnv)
	if !audited {
		conf += "\n[audit]\nenable = false\n"
	}
	if err := os.WriteFile(filepath.Join(cfg, "lathe", "config.toml"), []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--workspace", ws, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+cfg, "XDG_STATE_HOME="+state, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"),
		"LATHE_TOKEN="+benchToken)
	addr, err := startServer(b, cmd, name, serving)
	if err != nil {
		return nil, err
	}
	side := httpSide(name, "up__echo", addr, httpClient("Authorization", "Bearer "+benchToken), cmd.Process)
	if !audited {
		return side, nil
	}
	side.check = func(calls int) error {
		// The audit log must hold a finished record of every call timed.
		// This process sees them once lathe's writer has committed them,
		// tens of milliseconds after the calls (its journal is lathe's
		// alone while lathe lives).
		s, err := audit.Open(filepath.Join(ws, ".lathe", "lathe.db"))
		if err != nil {
			return fmt.Errorf("the audit log is not on: %v", err)
		}
		defer s.Close()
		deadline := time.Now().Add(10 * time.Second)
		for {
			recs, err := s.List(context.Background(), audit.Filter{Tool: "up__echo", Outcome: "ok", Limit: -1})
			if err != nil {
				return fmt.Errorf("reading the audit log: %v", err)
			}
			if len(recs) >= calls {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the audit log holds %d finished calls of up__echo 10 s after the last, want at least %d", len(recs), calls)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return side, nil
}

// serving reads the endpoint from a line "… serving MCP at http://…".
func serving(line string) (string, bool) {
	_, url, ok := strings.Cut(line, "serving MCP at ")
	return url, ok && strings.HasPrefix(url, "http://")
}

// startServer starts cmd and waits until a line of its standard error
// gives ready's answer; the rest of its output is dropped. The process is
// stopped and waited for when the benchmark ends.
func startServer(b *testing.B, cmd *exec.Cmd, name string, ready func(string) (string, bool)) (string, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", err
	}
	// A benchmark stopped with SIGKILL (a person's kill, a timeout) runs no
	// cleanup: the gateway is killed with it, and its upstream, whose
	// input then closes, ends too. The signal is tied to the thread that
	// starts the process, which Go ends only under LockOSThread.
	//
	// The gateway runs in a session of its own, as a service or a program
	// started in a terminal of its own does, apart from its clients: where
	// the kernel shares the processors between sessions (autogroup), the
	// clients, all in this process, would otherwise share the gateway's
	// scheduling group, which no client of a gateway does.
	// LATHE_BENCH_SHARED_SESSION=1 leaves it in this process's session.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setsid: os.Getenv(sharedSessionEnv) != "1"}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting %s: %v", name, err)
	}
	b.Cleanup(func() {
		// Asked to stop, a gateway stops its upstream too; one that has
		// not exited seconds later is killed.
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			b.Errorf("%s did not exit within 10s of SIGTERM; killed", name)
			cmd.Process.Kill()
			<-done
		}
	})
	found := make(chan string, 1)
	var seen strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if !sent {
				seen.WriteString(sc.Text() + "\n")
				if s, ok := ready(sc.Text()); ok {
					found <- s
					sent = true
				}
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case s, ok := <-found:
		if !ok {
			return "", fmt.Errorf("%s exited before it was ready", name)
		}
		return s, nil
	case <-time.After(60 * time.Second):
		return "", fmt.Errorf("%s was not ready after 60s", name)
	}
}

// startProxy builds TBXark/mcp-proxy and serves the upstream with it over
// streamable HTTP, or says why it cannot.
func startProxy(ctx context.Context, b *testing.B, dir, self string) (*gatewaySide, string) {
	src, err := proxySource(ctx, dir)
	if err != nil {
		return nil, err.Error()
	}
	bin := filepath.Join(dir, "mcp-proxy")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("building mcp-proxy from %s: %v\n%s", src, err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := fmt.Sprintf(`{
  "mcpProxy": {"baseURL": "http://%s", "addr": %q, "name": "mcp-proxy", "version": "1", "type": "streamable-http",
    "options": {"logEnabled": false, "panicIfInvalid": true, "authTokens": [%q]}},
  "mcpServers": {"up": {"command": %q, "env": {%q: "echo"}}}
}`, addr, addr, benchToken, self, upstreamEnv)
	cfile := filepath.Join(dir, "mcp-proxy.json")
	if err := os.WriteFile(cfile, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfile)
	if _, err := startServer(b, cmd, "mcp-proxy", func(line string) (string, bool) {
		return "", strings.Contains(line, "All clients initialized")
	}); err != nil {
		b.Fatal(err)
	}
	return httpSide("mcp-proxy", "echo", "http://"+addr+"/up/", httpClient("Authorization", "Bearer "+benchToken), cmd.Process), ""
}

// proxySource returns a directory holding mcp-proxy's module: the one
// LATHE_MCP_PROXY_SRC names, HEAD of the bare repository it names copied
// out under dir, or the module fetched into the module cache and copied
// out (the cache is read-only, and the build writes go.sum).
func proxySource(ctx context.Context, dir string) (string, error) {
	src := os.Getenv(proxySrcEnv)
	out := filepath.Join(dir, "mcp-proxy-src")
	if src == "" {
		dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", proxyModule+"@"+proxyVersion)
		dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		dl.Dir = dir
		res, err := dl.Output()
		var mod struct{ Dir, Error string }
		json.Unmarshal(res, &mod)
		if err != nil {
			if mod.Error != "" {
				err = errors.New(mod.Error)
			}
			return "", fmt.Errorf("%s is not set, and %s@%s could not be fetched into the module cache: %v",
				proxySrcEnv, proxyModule, proxyVersion, err)
		}
		if src = mod.Dir; src == "" {
			return "", fmt.Errorf("go mod download named no directory for %s: %s", proxyModule, res)
		}
	}
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
		if err := exec.CommandContext(ctx, "cp", "-R", src, out).Run(); err != nil {
			return "", fmt.Errorf("copying %s: %v", src, err)
		}
		// The module cache's copy is read-only.
		exec.Command("chmod", "-R", "u+w", out).Run()
		return out, nil
	}
	if err := os.MkdirAll(out, 0o700); err != nil {
		return "", err
	}
	arch := exec.CommandContext(ctx, "sh", "-c", `git --git-dir="$1" archive HEAD | tar -x -C "$2"`, "sh", src, out)
	if res, err := arch.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s=%s is neither a module directory nor a git repository: %v %s", proxySrcEnv, src, err, res)
	}
	return out, nil
}

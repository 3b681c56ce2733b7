package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/audit"
	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/server"
	"github.com/lathe-tools/lathe/server/web"
	"github.com/lathe-tools/lathe/tool"
)

// TokenEnv names the variable that gives lathe serve --http its bearer token
// when --token does not.
const TokenEnv = "LATHE_TOKEN"

func newServeCmd(g *globals) *cobra.Command {
	var addr, token string
	cmd := &cobra.Command{
		Use:   "serve [--http ADDR [--token TOKEN]]",
		Short: "Serve the tools as an MCP server",
		Long: "Serve every tool of the workspace — builtin, local, and those of the upstream MCP servers of the\n" +
			"config — as an MCP server: over standard input and output by default, or over streamable HTTP at\n" +
			"http://ADDR/mcp with --http ADDR.\n\n" +
			"Over TCP every request needs a bearer token, loopback included (other users of the machine reach\n" +
			"it too): --token, else $" + TokenEnv + ", else the workspace's token, made the first time and kept in\n" +
			"a file only you can read ($XDG_STATE_HOME/lathe/tokens); it is printed on standard error.\n" +
			"--http unix:PATH serves on a Unix socket only you can open, without a token. Requests from other\n" +
			"web origins are refused.\n\n" +
			"With --http it also serves the HTTP API at /api/ (docs/http.md): the tools, live calls, approvals\n" +
			"a client cannot answer itself, the audit log, grants, a reload, and the engine's events.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Over stdio there is nothing to authenticate: a token given
			// there would be ignored, and the user would believe it guards
			// something.
			if cmd.Flags().Changed("token") && addr == "" {
				return &usageError{errors.New("--token needs --http: over standard input and output there is no request to authenticate")}
			}
			if token == "" {
				token = os.Getenv(TokenEnv)
			}
			var ln net.Listener
			if addr != "" {
				// Listen before starting anything, so that a bad address
				// fails at once.
				var err error
				if ln, token, err = g.listen(addr, token); err != nil {
					return err
				}
				defer ln.Close()
			}
			// A server has no one to ask, and must not serve part of
			// its tools without saying so: an untrusted configuration
			// stops it.
			// Its terminal is not the person's: what an upstream server
			// asks goes to the client whose call caused it, or is refused.
			g.trust = trustRefuse
			g.hooks = tool.Hooks{}
			g.longLived = true
			g.metrics = ln != nil
			// Over HTTP a person can answer from the API (or its page)
			// what a client cannot; the queue and the live calls are made
			// once the configuration is read, before any call comes.
			var face *apiFace
			if ln != nil {
				face = g.prepareAPI()
			}
			w, err := g.openWorkspace(cmd.Context())
			if err != nil {
				return err
			}
			e := w.Engine
			defer w.Close()
			tuneGC()    // the collector's target for a server: see gc.go
			tuneProcs() // its threads: see gc.go
			srv := server.New(e, server.Options{Name: "lathe", Version: version(), Upstream: w.MCP, Logger: g.logger(),
				Audit: accessAudit(w), Rounds: roundOptions(w.Config.Serve)})
			defer srv.Close()
			ctx := cmd.Context()
			if ln == nil {
				return srv.ServeStdio(ctx, g.streams.In, g.streams.Out)
			}
			// The faces served beside MCP on the listener, by pattern;
			// the API adds itself at /api/.
			// The page holds no data: it reads everything from the API,
			// which authenticates each request.
			mounts := map[string]http.Handler{"/": web.Handler()}
			if m := g.metricsMount(token); m != nil {
				mounts["/metrics"] = m
			}
			st, err := face.serve(ctx, g, w, srv, token, mounts)
			if err != nil {
				return err
			}
			defer st.close()
			return serveHTTP(ctx, g, ln, st, st.end)
		},
	}
	cmd.Flags().StringVar(&addr, "http", "", "serve over streamable HTTP on `ADDR` (HOST:PORT, or unix:PATH) instead of stdio")
	cmd.Flags().StringVar(&token, "token", "", "bearer token that HTTP requests must carry (default: $"+TokenEnv+
		", else the workspace's token file); other users see it in the process list, so prefer $"+TokenEnv)
	return cmd
}

// listen opens the listener of --http addr and returns the token its
// requests must carry. A TCP listener always has one: a loopback address
// is open to every user of the machine. A Unix socket is made 0600 and
// needs none unless one is given: only its owner can connect.
func (g *globals) listen(addr, token string) (net.Listener, string, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			return nil, "", &usageError{fmt.Errorf("--http %q: want unix:PATH", addr)}
		}
		// The socket is made with no permission for others from the
		// start, not chmod-ed after: between the two, anyone could connect.
		old := syscall.Umask(0o177)
		ln, err := net.Listen("unix", path)
		syscall.Umask(old)
		if err != nil {
			return nil, "", &usageError{err}
		}
		return ln, token, nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, "", &usageError{fmt.Errorf("--http %q: want HOST:PORT, as in 127.0.0.1:8080, or unix:PATH: %v", addr, err)}
	}
	if token == "" {
		ws, err := g.workspaceDir()
		if err != nil {
			return nil, "", err
		}
		t, file, err := workspaceToken(ws)
		if err != nil {
			return nil, "", err
		}
		token = t
		fmt.Fprintf(g.streams.Err, "lathe: requests need the header  Authorization: Bearer %s\n", token)
		fmt.Fprintf(g.streams.Err, "lathe: the token is in %s\n", file)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", &usageError{err}
	}
	return ln, token, nil
}

// Timeouts of the HTTP server: a client gets headerTimeout to send a
// request's header (a slow one is cut off, against slowloris), and an idle
// keep-alive connection is closed after idleTimeout. The handler bounds
// the body (server.HTTPOptions).
var (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// serveHTTP serves h on ln until ctx ends (SIGTERM or SIGINT), then calls
// end, which cancels the calls in flight (pending approvals with them), so
// that their clients get their answers, and their audit records are
// finished, before the connections close.
func serveHTTP(ctx context.Context, g *globals, ln net.Listener, h http.Handler, end func() error) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: 64 << 10}
	if ln.Addr().Network() == "unix" {
		fmt.Fprintf(g.streams.Err, "lathe: serving MCP at unix:%s (path %s)\n", ln.Addr(), server.Path)
	} else {
		fmt.Fprintf(g.streams.Err, "lathe: serving MCP at http://%s%s\n", ln.Addr(), server.Path)
		fmt.Fprintf(g.streams.Err, "lathe: the web page is at http://%s/\n", ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	end()
	// Streams of clients still connected do not end on their own.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// accessAudit records the resource reads and prompt gets of the server's
// clients in the workspace's audit log, beside the calls.
func accessAudit(w *load.Workspace) func(context.Context, *server.Access) (func(server.AccessEnd), error) {
	return func(ctx context.Context, a *server.Access) (func(server.AccessEnd), error) {
		finish, err := w.StartAccess(ctx, &audit.Access{Kind: a.Kind, Session: a.Session, Name: a.Name,
			Arguments: a.Arguments, Server: a.Server})
		if err != nil {
			return nil, err
		}
		return func(e server.AccessEnd) {
			// A record that cannot be finished stays started, which the
			// log shows as incomplete, as a call's does.
			_ = finish(audit.AccessEnd{Denied: e.Denied, Reason: e.Reason, Outcome: e.Outcome, Bytes: e.Bytes})
		}, nil
	}
}

// roundOptions are the bounds of [serve] on the calls of MCP 2026-07-28
// clients that wait for their client's next round.
func roundOptions(c config.Serve) server.RoundOptions {
	return server.RoundOptions{Wait: c.RoundWait, MaxPerClient: c.MaxWaitingPerClient, MaxWaiting: c.MaxWaiting}
}

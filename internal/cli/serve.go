package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/server"
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
			"Over HTTP, a loopback address (127.0.0.1:8080, localhost:8080) needs no token unless one is given;\n" +
			"any other address requires a bearer token, from --token or $" + TokenEnv + ", or else one is generated\n" +
			"and printed on standard error. Requests from other web origins are refused.",
		Args: usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv(TokenEnv)
			}
			var ln net.Listener
			if addr != "" {
				// Listen before starting anything, so that a bad address
				// fails at once.
				host, _, err := net.SplitHostPort(addr)
				if err != nil {
					return &usageError{fmt.Errorf("--http %q: want HOST:PORT, as in 127.0.0.1:8080: %v", addr, err)}
				}
				if !server.Loopback(host) && token == "" {
					if token, err = newToken(); err != nil {
						return err
					}
					fmt.Fprintf(g.streams.Err, "lathe: %s is not a loopback address, so requests need a bearer token:\n", addr)
					fmt.Fprintf(g.streams.Err, "lathe: Authorization: Bearer %s\n", token)
				}
				if ln, err = net.Listen("tcp", addr); err != nil {
					return &usageError{err}
				}
				defer ln.Close()
			}
			// A server has no one to ask, and must not serve part of
			// its tools without saying so: an untrusted configuration
			// stops it.
			g.trust = trustRefuse
			e, err := g.openEngine()
			if err != nil {
				return err
			}
			defer e.Close()
			quietUpstream(e)
			srv := server.New(e, server.Options{Name: "lathe", Version: version()})
			defer srv.Close()
			onToolsChanged(e, srv.Sync)
			ctx := cmd.Context()
			if ln == nil {
				return srv.ServeStdio(ctx, g.streams.In, g.streams.Out)
			}
			return serveHTTP(ctx, g, ln, srv.Handler(server.HTTPOptions{Token: token}))
		},
	}
	cmd.Flags().StringVar(&addr, "http", "", "serve over streamable HTTP on `ADDR` (HOST:PORT) instead of stdio")
	cmd.Flags().StringVar(&token, "token", "", "bearer token that HTTP requests must carry (default: $"+TokenEnv+")")
	return cmd
}

func serveHTTP(ctx context.Context, g *globals, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(g.streams.Err, "lathe: serving MCP at http://%s%s\n", ln.Addr(), server.Path)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
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

func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

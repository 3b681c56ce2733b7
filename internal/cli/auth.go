package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/load"
	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

func newAuthCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to MCP servers that ask for authorization (OAuth), log out, show the state",
		Long: "An [mcp.NAME] server over url that answers 401 asks for the MCP authorization flow (OAuth 2.1).\n" +
			"lathe auth login NAME runs it once: it prints a URL to open in a browser, and takes the\n" +
			"authorization back on a loopback address (127.0.0.1). The tokens are kept outside the workspace,\n" +
			"in $XDG_STATE_HOME/lathe/oauth (by default ~/.local/state/lathe/oauth), readable by you alone,\n" +
			"per workspace, server and URL; lathe refreshes them as they expire.",
	}
	cmd.AddCommand(newAuthLoginCmd(g), newAuthLogoutCmd(g), newAuthStatusCmd(g))
	return cmd
}

// authServer returns the [mcp.NAME] server over HTTP named name, from the
// configuration as trust lets it apply, and the workspace.
func (g *globals) authServer(name string) (string, config.MCPServer, error) {
	ws, err := g.workspaceDir()
	if err != nil {
		return "", config.MCPServer{}, err
	}
	cfg, _, err := g.loadConfig(ws, trustAsk)
	if err != nil {
		return "", config.MCPServer{}, err
	}
	servers, err := cfg.MCPServers(os.LookupEnv)
	if err != nil {
		return "", config.MCPServer{}, &configError{err}
	}
	i := slices.IndexFunc(servers, func(s config.MCPServer) bool { return s.Name == name })
	switch {
	case i < 0:
		return "", config.MCPServer{}, &usageError{fmt.Errorf("no MCP server %s is configured here (an [mcp.%s] table with a url, in a file you trust)", name, name)}
	case servers[i].URL == "":
		return "", config.MCPServer{}, &usageError{fmt.Errorf("the MCP server %s runs a command; only a server over url logs in", name)}
	case servers[i].Unavailable != nil:
		return "", config.MCPServer{}, &configError{servers[i].Unavailable}
	}
	return ws, servers[i], nil
}

func newAuthLoginCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorize lathe at the MCP server NAME and keep its tokens",
		Args:  usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, s, err := g.authServer(args[0])
			if err != nil {
				return err
			}
			opts, err := load.OAuth(ws, s)
			if err != nil {
				return err
			}
			opts.CallbackTimeout = timeout
			opts.Open = func(_ context.Context, u string) error {
				fmt.Fprintf(g.streams.Err, "Open this URL in a browser to authorize lathe at the MCP server %s:\n\n  %s\n\nWaiting for the authorization (up to %s)…\n",
					s.Name, printableURL(u), timeout)
				return nil
			}
			rec, err := oauth.Login(cmd.Context(), opts, s.Headers)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.streams.Out, "Logged in to %s (%s).\n", s.Name, s.URL)
			if rec.RefreshToken == "" && !rec.Expiry.IsZero() {
				fmt.Fprintf(g.streams.Out, "The server gave no refresh token: log in again after %s.\n", rec.Expiry.Local().Format(time.DateTime))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", oauth.DefaultCallbackTimeout, "how long to wait for the authorization")
	return cmd
}

func newAuthLogoutCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the tokens of the MCP server NAME",
		Long: "Forget the tokens of the MCP server NAME in this workspace. The authorization server is not told:\n" +
			"revoke the grant there too if the tokens may have leaked.",
		Args: usage(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			ws, s, err := g.authServer(args[0])
			if err != nil {
				return err
			}
			opts, err := load.OAuth(ws, s)
			if err != nil {
				return err
			}
			ok, err := opts.Store.Delete(opts.Workspace, s.Name, s.URL)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(g.streams.Out, "No tokens of %s (%s) were kept.\n", s.Name, s.URL)
				return nil
			}
			fmt.Fprintf(g.streams.Out, "Logged out of %s (%s).\n", s.Name, s.URL)
			return nil
		},
	}
}

func newAuthStatusCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show, for each MCP server over url, whether lathe holds its tokens",
		Args:  usage(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := g.workspaceDir()
			if err != nil {
				return err
			}
			cfg, _, err := g.loadConfig(ws, trustWarn)
			if err != nil {
				return err
			}
			servers, err := cfg.MCPServers(os.LookupEnv)
			if err != nil {
				return &configError{err}
			}
			var store *oauth.Store
			key := ws
			shown := 0
			for _, s := range servers {
				if s.URL == "" || s.Unavailable != nil {
					continue
				}
				opts, err := load.OAuth(ws, s)
				if err != nil {
					return err
				}
				store, key = opts.Store, opts.Workspace
				rec, err := store.Load(key, s.Name, s.URL)
				state := "not logged in"
				switch {
				case err != nil:
					state = "unusable token file: " + err.Error()
				case rec == nil:
				case rec.RefreshToken != "":
					state = "logged in (refreshed as it expires)"
				case rec.Expiry.IsZero() || time.Now().Before(rec.Expiry):
					state = "logged in"
					if !rec.Expiry.IsZero() {
						state += ", until " + rec.Expiry.Local().Format(time.DateTime)
					}
				default:
					state = "expired: run lathe auth login " + s.Name
				}
				fmt.Fprintf(g.streams.Out, "%s\t%s\t%s\n", s.Name, s.URL, state)
				shown++
			}
			if shown == 0 {
				fmt.Fprintln(g.streams.Out, "No MCP server over url is configured here.")
				return nil
			}
			// Tokens of servers no longer configured are still kept:
			// say so, since logging out of them needs their table.
			recs, err := store.List(key)
			for _, r := range recs {
				if !slices.ContainsFunc(servers, func(s config.MCPServer) bool { return s.Name == r.Server && s.URL == r.Resource }) {
					fmt.Fprintf(g.streams.Out, "%s\t%s\ttokens kept, but no such server is configured (its file is in %s)\n", r.Server, r.Resource, store.Dir())
				}
			}
			if err != nil {
				return errors.Join(errors.New("some token files cannot be read"), err)
			}
			return nil
		},
	}
}

// printableURL writes every byte of u that is not printable ASCII as a
// percent escape. The URL is built from the authorization server's
// metadata, which is the server's to write: an escape sequence or a
// right-to-left mark in it must neither act on the terminal nor make the
// URL read as another. A browser reads the escaped URL as the same one.
func printableURL(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c >= 0x7f {
			fmt.Fprintf(&b, "%%%02X", c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

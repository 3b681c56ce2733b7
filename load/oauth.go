package load

import (
	"path/filepath"

	"github.com/lathe-tools/lathe/config"
	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

// OAuth returns the options of the OAuth handler of the server s over HTTP
// in the workspace ws: its [mcp.NAME.oauth] settings and the user's token
// store, keyed by the workspace's real path, the server's name and URL.
// The store must lie outside the workspace, where no tool can read a token
// or plant one; when it does not, the error says so. Options.Open is left
// unset: the flow runs only where a person asked for it (lathe auth login).
func OAuth(ws string, s config.MCPServer) (oauth.Options, error) {
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real
	}
	opts := oauth.Options{
		Workspace:         ws,
		Server:            s.Name,
		URL:               s.URL,
		ClientID:          s.OAuth.ClientID,
		ClientSecret:      s.OAuth.ClientSecret,
		ClientMetadataURL: s.OAuth.ClientMetadataURL,
		Scopes:            s.OAuth.Scopes,
		CallbackPort:      s.OAuth.CallbackPort,
		LoginHint:         "run lathe auth login " + s.Name,
	}
	dir, err := oauth.DefaultDir()
	if err != nil {
		return opts, err
	}
	store := oauth.OpenStore(dir)
	if err := store.CheckOutside(ws); err != nil {
		return opts, err
	}
	opts.Store = store
	return opts, nil
}

// oauthHandler is the OAuth handler of the server s over HTTP: the stored
// token, refreshed as it expires. A store that cannot be used is reported
// through warn, and the server is spoken to without a token.
func oauthHandler(ws string, s config.MCPServer, warn func(error)) *oauth.Handler {
	opts, err := OAuth(ws, s)
	if err != nil {
		warn(err)
		opts.Store = nil
	}
	opts.Warn = warn
	h, err := oauth.NewHandler(opts)
	if err != nil {
		warn(err)
		opts.Store = nil
		h, _ = oauth.NewHandler(opts)
	}
	return h
}

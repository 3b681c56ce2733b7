package mcp

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/lathe-tools/lathe/runtime/mcp/oauth"
)

// httpClient is the client of a server over HTTP: its requests carry the
// configured headers and the OAuth token, so it speaks to the origin of
// the server's URL and to no other. A redirect elsewhere is not followed
// (Go's own client would follow it, and send a custom header, or even
// Authorization to another port of the same host), and a request to
// another origin is refused before any header is added. Its connections
// are its own (base, one per session): a server that crashed leaves
// connections behind that are dead, and the session that follows must not
// send its initialize on one of them, where a POST fails without a retry.
func httpClient(endpoint string, headers map[string]string, cap *capture, base http.RoundTripper) *http.Client {
	origin := ""
	if u, err := url.Parse(endpoint); err == nil {
		origin = oauth.Origin(u)
	}
	return &http.Client{
		Transport:     &originTransport{origin: origin, inner: &headerTransport{headers: headers, cap: cap, base: base}},
		CheckRedirect: oauth.SameOrigin,
	}
}

// originTransport refuses a request to another origin than its server's.
type originTransport struct {
	origin string
	inner  http.RoundTripper
}

func (t *originTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if o := oauth.Origin(req.URL); o != t.origin {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("refusing a request to %s: this server's credentials go to %s only", o, t.origin)
	}
	return t.inner.RoundTrip(req)
}

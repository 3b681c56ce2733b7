package server

import (
	"cmp"
	"net"
	"net/http"
)

// Rebound reports whether r reached a loopback address under a name that is
// not a loopback name: a page of another site whose name was made to resolve
// to 127.0.0.1 (DNS rebinding). Its browser sends the foreign name as Host,
// and treats the answer as that site's, so such a request is refused before
// anything else looks at it.
func Rebound(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	host, _, err := net.SplitHostPort(local.String())
	if err != nil || !Loopback(host) {
		return false
	}
	return !Loopback(hostOnly(r.Host))
}

// mounted guards a handler of [HTTPOptions.Mounts] as MCP is guarded:
// foreign Host names on a loopback listener, foreign origins, and the body's
// size and time.
func mounted(opts HTTPOptions, maxBody int64, next http.Handler) http.Handler {
	next = bodyDeadline(cmp.Or(opts.BodyTimeout, DefaultBodyTimeout), maxBody, sameOrigin(next))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if Rebound(r) {
			http.Error(w, "misdirected: this server answers only loopback names", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

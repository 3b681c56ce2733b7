package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxRedirects bounds the redirects one fetch follows.
const maxRedirects = 10

// netClient fetches for the host's sessions. Its transport dials only what
// the permissions name: each connection's host is checked by name, then
// each address it resolves to, so that a name granted by a wildcard cannot
// lead to a loopback or private address (DNS rebinding); it uses no proxy,
// since a proxy would make the addresses it reaches its own.
type netClient struct {
	h         *Host
	transport *http.Transport
}

func newNetClient(h *Host) *netClient {
	c := &netClient{h: h}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c.transport = &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.dial(ctx, d, network, addr)
		},
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    15 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 1 << 20,
	}
	return c
}

func (c *netClient) close() { c.transport.CloseIdleConnections() }

// errPrivate is the dial error for an address a name may not lead to.
type errPrivate struct{ host, addr string }

func (e *errPrivate) Error() string {
	return fmt.Sprintf("%s resolves to %s, a loopback, private or link-local address, which only a net entry naming the host without a wildcard reaches", e.host, e.addr)
}

// dial connects to addr ("host:port" of the URL) after checking it again:
// the permissions by name, then every address it resolves to.
func (c *netClient) dial(ctx context.Context, d *net.Dialer, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, _ := strconv.Atoi(portStr)
	ok, literal := c.h.perms.netAllows(host, port)
	if !ok {
		// The request was checked by name before it was sent: a dial to
		// another host means something rewrote it.
		return nil, fmt.Errorf("a connection to %s is outside the tool's net permissions", addr)
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
	}
	var errs []error
	for _, ip := range addrs {
		ip = ip.Unmap()
		if !public(ip) && !literal {
			errs = append(errs, &errPrivate{host: host, addr: ip.String()})
			continue
		}
		conn, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), portStr))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return nil, errors.Join(errs...)
}

// public reports whether ip is an address of the internet at large: not
// loopback, private, link-local (the cloud metadata service), shared
// (carrier-grade NAT), multicast or unspecified.
func public(ip netip.Addr) bool {
	switch {
	case ip.IsLoopback(), ip.IsPrivate(), ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(),
		ip.IsInterfaceLocalMulticast(), ip.IsMulticast(), ip.IsUnspecified():
		return false
	case ip.Is4() && cgnat.Contains(ip), ip.Is4() && ip.As4()[0] == 0:
		return false
	}
	return true
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// checkURL checks one URL of a fetch, the first or a redirect's: http or
// https, no user information, a host the permissions grant. It returns
// the subject the operation is known by (the URL without its query and
// fragment, which may carry tokens) and a denial message, or "".
func (s *Session) checkURL(u *url.URL) (string, string) {
	subject := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return subject, fmt.Sprintf("fetch of %q: only http and https URLs are fetched", subject)
	case u.User != nil:
		return subject, fmt.Sprintf("fetch of %q: a URL with user information (user:password@) is refused; send credentials in a header", subject)
	case u.Hostname() == "":
		return subject, fmt.Sprintf("fetch of %q: the URL names no host", subject)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return subject, fmt.Sprintf("fetch of %q: the port is not a number from 1 to 65535", subject)
		}
		port = n
	}
	if ok, _ := s.h.perms.netAllows(u.Hostname(), port); !ok {
		entry := net.JoinHostPort(strings.ToLower(u.Hostname()), strconv.Itoa(port))
		return subject, s.h.outside(fmt.Sprintf("fetch of %q", subject), entry, "net")
	}
	return subject, ""
}

func (s *Session) fetch(ctx context.Context, p FetchParams) (any, *Error) {
	o := s.begin(KindFetch, p.URL)
	u, err := url.Parse(p.URL)
	if err != nil {
		o.approval, o.by = "deny", "host"
		return nil, s.finish(ctx, o, invalid("net/fetch: the URL does not parse: %v", err))
	}
	subject, denial := s.checkURL(u)
	o.subject = subject
	if denial != "" {
		return nil, s.deny(ctx, o, "permissions", denial)
	}
	if e := s.decide(ctx, o); e != nil {
		return nil, e
	}
	method := p.Method
	if method == "" {
		method = http.MethodGet
	}
	if int64(len(p.Body)) > s.h.cfg.Limits.Write {
		return nil, s.finish(ctx, o, tooLarge("net/fetch: the body's %d bytes are over the host's limit of %d", len(p.Body), s.h.cfg.Limits.Write))
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(p.Body))
	if err != nil {
		return nil, s.finish(ctx, o, invalid("net/fetch: %v", err))
	}
	for k, v := range p.Headers {
		if strings.EqualFold(k, "Host") {
			return nil, s.finish(ctx, o, invalid("net/fetch: the Host header is the URL's; it cannot be set"))
		}
		req.Header.Set(k, v)
	}
	// Each redirect is a fetch of its own URL: checked by name and by the
	// policy before it is followed. A denied one ends the fetch, and is
	// recorded as what was denied.
	var hopDenied *Error
	client := &http.Client{Transport: s.h.net.transport, CheckRedirect: func(next *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		hop := s.begin(KindFetch, next.URL.String())
		sub, denial := s.checkURL(next.URL)
		hop.subject = sub
		if denial != "" {
			hopDenied = s.deny(ctx, hop, "permissions", "a redirect from "+subject+" leads to a host outside the permissions: "+denial)
			return hopDenied
		}
		if e := s.decide(ctx, hop); e != nil {
			hopDenied = e
			return e
		}
		s.finish(ctx, hop, nil)
		// Credentials set for the first host do not travel to another.
		if next.URL.Host != via[0].URL.Host {
			next.Header.Del("Authorization")
			next.Header.Del("Cookie")
		}
		return nil
	}}
	resp, err := client.Do(req)
	if err != nil {
		if hopDenied != nil {
			o.approval, o.by, o.reason = "deny", "permissions", hopDenied.Message
			return nil, s.finish(ctx, o, hopDenied)
		}
		var pe *errPrivate
		if errors.As(err, &pe) {
			e := &Error{Code: CodeDenied, Message: fmt.Sprintf("fetch of %q: %v", subject, pe)}
			o.approval, o.by, o.reason = "deny", "host", e.Message
			return nil, s.finish(ctx, o, e)
		}
		return nil, s.finish(ctx, o, failed("fetch of %q: %v", subject, unwrapURL(err)))
	}
	defer resp.Body.Close()
	max := s.h.cfg.Limits.Fetch
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, s.finish(ctx, o, failed("fetch of %q: reading the response: %v", subject, err))
	}
	res := FetchResult{Status: resp.StatusCode, Headers: map[string]string{}, Body: body}
	if int64(len(body)) > max {
		res.Body, res.Truncated = body[:max], true
	}
	for _, k := range slices.Sorted(maps.Keys(resp.Header)) {
		res.Headers[k] = strings.Join(resp.Header[k], ", ")
	}
	o.bytes = int64(len(res.Body))
	s.finish(ctx, o, nil)
	return res, nil
}

// unwrapURL drops the *url.Error wrapping, whose text repeats the URL
// with its query.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

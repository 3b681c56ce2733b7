package host

import "context"

// netClient fetches for the host's sessions.
type netClient struct{}

func newNetClient(h *Host) *netClient { return &netClient{} }

func (c *netClient) close() {}

func (s *Session) fetch(ctx context.Context, p FetchParams) (any, *Error) {
	return nil, failed("net/fetch: not in this build yet")
}

func (s *Session) run(ctx context.Context, p RunParams) (any, *Error) {
	return nil, failed("proc/run: not in this build yet")
}

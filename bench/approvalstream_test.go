package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/approvals"
	"github.com/lathe-tools/lathe/policy"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/server/httpapi"
	"github.com/lathe-tools/lathe/tool"
)

// BenchmarkApprovalToStream measures how long after a call begins to wait
// for an approval a client of GET /api/events (a page) hears of it: the
// time from the call's start to the approval_pending event read from the
// stream over real HTTP, against the raw floor of the same run: the time
// from the call's start to the engine's own approval_asked event, delivered
// in the process to a subscriber. It reports ms/stream, ms/raw and
// stream/raw. Each call is denied from the queue as soon as it is heard of.
func BenchmarkApprovalToStream(b *testing.B) {
	q := approvals.New(approvals.Options{Wait: 30 * time.Second})
	e := lathe.New(lathe.Options{Middleware: []lathe.Middleware{
		policy.Middleware(&policy.Policy{}, policy.Options{Fallback: q})}})
	defer e.Close()
	e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "wipe"},
		func(context.Context, struct{}) (string, error) { return "wiped", nil })))
	api, err := httpapi.New(httpapi.Options{Engine: e, Token: "t", Approvals: q})
	if err != nil {
		b.Fatal(err)
	}
	defer api.Close()
	srv := httptest.NewServer(api)
	defer srv.Close()

	raw := make(chan time.Time, 16)
	defer e.Subscribe(func(ev lathe.Event) { raw <- time.Now() }, lathe.EventApprovalAsked)()
	req, _ := http.NewRequest("GET", srv.URL+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	type heard struct {
		at         time.Time
		id, digest string
	}
	stream := make(chan heard, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		pending := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: approval_pending":
				pending = true
			case pending && strings.HasPrefix(line, "data: "):
				at := time.Now()
				var ev httpapi.Event
				json.Unmarshal([]byte(line[len("data: "):]), &ev)
				stream <- heard{at: at, id: ev.Approval.ID}
				pending = false
			}
		}
	}()
	var streamTime, rawTime time.Duration
	for b.Loop() {
		done := make(chan struct{})
		start := time.Now()
		go func() {
			e.Call(context.Background(), &tool.Call{Name: "wipe"})
			close(done)
		}()
		var h heard
		select {
		case h = <-stream:
		case <-time.After(10 * time.Second):
			b.Fatal("no approval_pending on the stream within 10s")
		}
		r := <-raw
		streamTime += h.at.Sub(start)
		rawTime += r.Sub(start)
		p, ok := q.Get(h.id)
		if !ok {
			b.Fatalf("approval %s not pending", h.id)
		}
		q.Answer(p.ID, p.Digest, policy.Answer{Verdict: policy.Refuse})
		<-done
	}
	b.ReportMetric(streamTime.Seconds()*1000/float64(b.N), "ms/stream")
	b.ReportMetric(rawTime.Seconds()*1000/float64(b.N), "ms/raw")
	b.ReportMetric(streamTime.Seconds()/rawTime.Seconds(), "stream/raw")
}

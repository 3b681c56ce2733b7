package server

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lathe-tools/lathe"
	"github.com/lathe-tools/lathe/runtime/builtin"
	"github.com/lathe-tools/lathe/tool"
)

// listenServer serves a tool "wait" that runs until release is closed, and
// makes a task of every call of a client of the tasks extension at once.
func listenServer(t *testing.T, opts HTTPOptions) (s *Server, url string, release chan struct{}) {
	t.Helper()
	release = make(chan struct{})
	e := lathe.New(lathe.Options{Timeout: 20 * time.Second})
	t.Cleanup(func() { e.Close() })
	if err := e.Register(builtin.Must(builtin.Func(tool.Definition{Name: "wait", Summary: "Wait."},
		func(ctx context.Context, _ struct{}) (string, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "done", nil
		}))); err != nil {
		t.Fatal(err)
	}
	s = New(e, Options{Tasks: TaskOptions{Promote: -1}})
	ts := httptest.NewServer(s.Handler(opts))
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		ts.Close()
		s.Close()
	})
	return s, ts.URL + Path, release
}

// post26 sends body, a request of MCP 2026-07-28 of the tasks extension,
// with the headers that version asks for, and any of extra.
func post26(ctx context.Context, t *testing.T, url, method, body string, extra http.Header) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	for k, v := range extra {
		if v == nil {
			req.Header.Del(k)
			continue
		}
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return resp
}

// meta26 is the _meta of a request of a client of the tasks extension.
func meta26(name string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
}

// TestListenNamesOnlyItsOwnStream: the name of a listen's response travels
// in a header of its request (Lathe-Listen-Stream), and lathe sets it only
// on the listens of clients without a session. A client that sends that
// header itself, naming another client's listen, in a listen of a session
// of MCP 2025-11-25 that holds no standalone stream (whose task
// notifications would have nowhere else to go), must not have its task's
// notifications written on the other client's response. The name is a
// secret of 128 random bits; the test reads it from the server, as a client
// that learnt it would know it.
func TestListenNamesOnlyItsOwnStream(t *testing.T) {
	s, url, release := listenServer(t, HTTPOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// The victim's listen, open (it follows the list of tools), follows no
	// task.
	vctx, vend := context.WithCancel(ctx)
	defer vend()
	vresp := post26(vctx, t, url, "subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen",`+
		`"params":{"_meta":`+meta26("victim")+`,"notifications":{"toolsListChanged":true,"taskIds":[]}}}`, nil)
	defer vresp.Body.Close()
	if vresp.StatusCode != http.StatusOK {
		t.Fatalf("the victim's listen: %s", vresp.Status)
	}
	victim := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(vresp.Body)
		for sc.Scan() {
			victim <- sc.Text()
		}
		close(victim)
	}()
	var name string
	for deadline := time.Now().Add(5 * time.Second); name == ""; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the victim's listen was not named within 5s")
		}
		s.mu.Lock()
		for n := range s.listens {
			name = n
		}
		s.mu.Unlock()
	}

	// The attacker's task.
	resp := post26(ctx, t, url, "tools/call", `{"jsonrpc":"2.0","id":2,"method":"tools/call",`+
		`"params":{"name":"wait","arguments":{},"_meta":`+meta26("attacker")+`}}`, http.Header{"Mcp-Name": {"wait"}})
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text())
	}
	resp.Body.Close()
	_, rest, _ := strings.Cut(b.String(), `"taskId":"`)
	task, _, ok := strings.Cut(rest, `"`)
	if !ok {
		t.Fatalf("the attacker's call did not become a task: %s", b.String())
	}

	// The attacker's listen names the victim's response. It is sent in a
	// session of MCP 2025-11-25 of the attacker's own, which holds no
	// standalone stream: listenStream names only the listens of clients
	// without a session, and this one's response goes unnamed.
	init := post26(ctx, t, url, "initialize", `{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25",`+
		`"capabilities":{},"clientInfo":{"name":"attacker","version":"1"}}}`, http.Header{"Mcp-Protocol-Version": nil})
	sid := init.Header.Get("Mcp-Session-Id")
	init.Body.Close()
	if sid == "" {
		t.Fatalf("initialize: %s, no session", init.Status)
	}
	session := http.Header{"Mcp-Session-Id": {sid}, "Mcp-Protocol-Version": {"2025-11-25"}}
	post26(ctx, t, url, "notifications/initialized", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, session).Body.Close()
	actx, aend := context.WithCancel(ctx)
	defer aend()
	session[listenHeader] = []string{name}
	aresp := post26(actx, t, url, "subscriptions/listen", `{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen",`+
		`"params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}},`+
		`"notifications":{"toolsListChanged":true,"taskIds":["`+task+`"]}}}`, session)
	defer aresp.Body.Close()
	if aresp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(aresp.Body)
		t.Fatalf("the attacker's listen was refused (%s %s): the attack is not tried", aresp.Status, b)
	}
	// The SDK serves it: its acknowledgement comes.
	ack := bufio.NewScanner(aresp.Body)
	for ack.Scan() && !strings.Contains(ack.Text(), "notifications/subscriptions/acknowledged") {
	}
	if !strings.Contains(ack.Text(), "notifications/subscriptions/acknowledged") {
		t.Fatalf("the attacker's listen was not served by the SDK (%q): the attack is not tried", ack.Text())
	}

	// The attacker's task changes (it ends): its notification would go
	// on the response its listen named.
	close(release)
	timeout := time.After(2 * time.Second)
	for {
		select {
		case line, ok := <-victim:
			if !ok {
				t.Fatal("the victim's listen ended")
			}
			if strings.Contains(line, task) {
				t.Fatalf("the attacker's task reached the victim's listen: %s", line)
			}
		case <-timeout:
			return
		}
	}
}

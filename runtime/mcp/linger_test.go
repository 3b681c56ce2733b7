package mcp

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

func TestLingerSet(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := lingerSet{}
	const linger = 100
	if l.size() != 0 || l.others("a") {
		t.Fatal("an empty set holds a session")
	}
	if _, ok := l.newest(); ok {
		t.Fatal("an empty set has a newest session")
	}
	l.add("a", at(0+linger))
	l.add("b", at(10+linger))
	l.add("a", at(20+linger)) // a again: until 120, its entry of 100 is stale
	l.prune(at(50))
	if l.size() != 2 || !l.has("a") || !l.has("b") {
		t.Fatalf("at 50: %v, want a and b", l.until)
	}
	if s, _ := l.newest(); s != "a" {
		t.Fatalf("newest = %q, want a", s)
	}
	var order []string
	l.each(func(s string, until time.Time) bool {
		order = append(order, fmt.Sprintf("%s@%d", s, until.Sub(t0).Milliseconds()))
		return true
	})
	if fmt.Sprint(order) != "[b@110 a@120]" {
		t.Fatalf("each = %v, want b then a, each with its expiry, the stale entry of a skipped", order)
	}

	// a's first entry expires at 100; a stays, until its second.
	l.prune(at(100))
	if !l.has("a") || !l.has("b") {
		t.Fatalf("at 100: %v; a's stale entry expired and took a with it", l.until)
	}
	l.prune(at(110))
	if l.has("b") || !l.has("a") || l.size() != 1 {
		t.Fatalf("at 110: %v, want a alone", l.until)
	}
	if l.others("a") || !l.others("b") {
		t.Fatal("others is wrong with a alone in the set")
	}
	l.prune(at(120))
	if l.size() != 0 || l.has("a") {
		t.Fatalf("at 120: %v, want none", l.until)
	}
	if _, ok := l.newest(); ok {
		t.Fatal("the set is empty and still names a newest session")
	}
}

// A client of MCP 2026-07-28 is a session of its own for each call: a burst
// of calls leaves as many sessions behind, and what the set keeps of them
// must go when their time is up, or each later call pays for the burst.
func TestLingerSetForgetsABurst(t *testing.T) {
	t0 := time.Now()
	l := lingerSet{}
	const burst = 20000
	for i := range burst {
		l.add("s"+strconv.Itoa(i), t0.Add(time.Second+time.Duration(i)*time.Microsecond))
	}
	l.prune(t0.Add(time.Second + burst/2*time.Microsecond))
	if n := l.size(); n != burst/2-1 {
		t.Fatalf("half-way through the burst's expiry: %d sessions, want %d", n, burst/2-1)
	}
	if len(l.queue) > burst/2+1 {
		t.Fatalf("the queue holds %d entries after half expired, want at most %d", len(l.queue), burst/2+1)
	}
	l.add("late", t0.Add(3*time.Second))
	l.prune(t0.Add(2*time.Second + 500*time.Millisecond))
	if l.size() != 1 || !l.has("late") {
		t.Fatalf("after the burst's time: %d sessions, want the late one alone", l.size())
	}
	l.prune(t0.Add(3 * time.Second))
	if l.size() != 0 || l.until != nil || cap(l.queue) != 0 {
		t.Fatalf("after every expiry: %d sessions, map %v, queue room %d; the burst's storage is kept",
			l.size(), l.until != nil, cap(l.queue))
	}
}

// One session whose calls end one after another, as fast as a client can
// cancel them: the queue holds no more than a few entries per session.
func TestLingerSetOneSessionAgainAndAgain(t *testing.T) {
	t0 := time.Now()
	l := lingerSet{}
	for i := range 100000 {
		l.add("alice", t0.Add(30*time.Second+time.Duration(i)*time.Microsecond))
		if i%7 == 0 {
			l.add("bob", t0.Add(30*time.Second+time.Duration(i)*time.Microsecond))
		}
	}
	if l.size() != 2 {
		t.Fatalf("%d sessions, want alice and bob", l.size())
	}
	if n := len(l.queue) - l.head; n > 2*2+65 {
		t.Fatalf("the queue holds %d entries for 2 sessions", n)
	}
	// Their last entries are the ones that count.
	var seen []string
	l.each(func(s string, until time.Time) bool {
		seen = append(seen, s)
		return true
	})
	if len(seen) != 2 {
		t.Fatalf("each gave %v, want each session once", seen)
	}
	l.prune(t0.Add(30*time.Second + 99999*time.Microsecond))
	if l.size() != 0 {
		t.Fatalf("after the last expiry: %d sessions", l.size())
	}
}

func TestLingering(t *testing.T) {
	now := time.Now()
	set := func(sessions ...string) *lingerSet {
		l := &lingerSet{}
		for _, s := range sessions {
			l.add(s, now.Add(time.Minute))
		}
		return l
	}
	for _, c := range []struct {
		answered, abandoned []string
		want                string
		n                   int
	}{
		{nil, nil, "", 0},
		{[]string{"a"}, nil, "a", 1},
		{nil, []string{"a"}, "a", 1},
		{[]string{"a"}, []string{"a"}, "a", 1},
		{[]string{"a", "a"}, []string{"a"}, "a", 1},
		{[]string{"a"}, []string{"b"}, "", 2},
		{[]string{"a", "b"}, nil, "", 2},
		{nil, []string{"a", "b"}, "", 2},
		{[]string{""}, nil, "", 1}, // the calls of no session
	} {
		sid, n := lingering(set(c.answered...), set(c.abandoned...))
		if n != c.n || (n == 1 && sid != c.want) {
			t.Errorf("lingering(%q, %q) = %q, %d; want %q, %d", c.answered, c.abandoned, sid, n, c.want, c.n)
		}
	}
}

// BenchmarkTrack measures what a call's bookkeeping on its server costs
// (track and untrack) when no session ended lately ("none"), and when
// 10,000 did ("many"), as a gateway serving clients of MCP 2026-07-28 (a
// session per call) sees within a linger: the two take turns in blocks of
// calls, and "many/none" is the ratio of their times per call.
func BenchmarkTrack(b *testing.B) {
	none := &server{inflight: map[uint64]*inflight{}}
	many := &server{inflight: map[uint64]*inflight{}}
	for j := range 10000 {
		many.untrack(many.track(&inflight{session: "old" + strconv.Itoa(j)}), true)
	}
	// A session of its own per call, as a client of MCP 2026-07-28 has,
	// from a bounded set.
	sessions := make([]string, 1024)
	for j := range sessions {
		sessions[j] = "new" + strconv.Itoa(j)
	}
	const block = 1000
	var spent [2]time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i, s := range []*server{none, many} {
			t0 := time.Now()
			for k := range block {
				s.untrack(s.track(&inflight{session: sessions[(n+k)%len(sessions)]}), true)
			}
			spent[i] += time.Since(t0)
		}
		n += block
	}
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(n), "none-ns/call")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(n), "many-ns/call")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "many/none")
}

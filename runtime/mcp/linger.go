package mcp

import "time"

// lingerSet holds the sessions with a call that ended lately, each until a
// linger after the last of its calls that ended.
//
// A server asks it on every call (server.track) and for every log message
// that names no call (server.background), so what it answers costs the same
// however many sessions ended lately: a client of MCP 2026-07-28 is a
// session of its own for each call, and a gateway serving thousands of
// calls a second sees thousands of sessions end in each linger. Entries are
// queued in the order they were added, which must be the order they expire
// in (one linger for a set, times taken under the server's lock); a session
// added again leaves its older entry in the queue, stale, skipped when it
// comes up. Stale entries are dropped once they outnumber the sessions,
// so that a session whose calls end one after another (a client cancelling
// calls as fast as it makes them) keeps the queue no longer than the set.
type lingerSet struct {
	until map[string]time.Time // each live session's expiry
	queue []lingerEntry        // oldest first, from head
	head  int
}

type lingerEntry struct {
	session string
	until   time.Time
}

// add notes that a call of session ended, and counts until until, no
// sooner than anything added before.
func (l *lingerSet) add(session string, until time.Time) {
	if l.until == nil {
		l.until = map[string]time.Time{}
	}
	l.until[session] = until
	l.queue = append(l.queue, lingerEntry{session, until})
	if l.stale() > len(l.until)+64 {
		l.dropStale()
	}
}

// stale is how many entries of the queue a later one of their session
// replaced: each session in the set has one live entry, its latest.
func (l *lingerSet) stale() int { return len(l.queue) - l.head - len(l.until) }

// dropStale keeps, of the queue, the entries of live sessions.
func (l *lingerSet) dropStale() {
	live := l.queue[:0]
	for _, e := range l.queue[l.head:] {
		if u, ok := l.until[e.session]; ok && u.Equal(e.until) {
			live = append(live, e)
		}
	}
	clear(l.queue[len(live):])
	l.queue, l.head = live, 0
}

// prune forgets the sessions whose time is up at now.
func (l *lingerSet) prune(now time.Time) {
	for l.head < len(l.queue) && !l.queue[l.head].until.After(now) {
		e := l.queue[l.head]
		l.queue[l.head] = lingerEntry{}
		l.head++
		if u, ok := l.until[e.session]; ok && u.Equal(e.until) {
			delete(l.until, e.session)
		}
	}
	switch {
	case l.head == len(l.queue):
		// Empty: let the storage of a burst go.
		if cap(l.queue) > 64 {
			l.queue = nil
		} else {
			l.queue = l.queue[:0]
		}
		if len(l.until) == 0 {
			// A map keeps the room of its largest size, and walks it.
			l.until = nil
		}
		l.head = 0
	case l.head > len(l.queue)/2 && l.head >= 64:
		n := copy(l.queue, l.queue[l.head:])
		clear(l.queue[n:])
		l.queue, l.head = l.queue[:n], 0
	}
}

// size is how many sessions are in the set (as of the last prune).
func (l *lingerSet) size() int { return len(l.until) }

// has reports whether session is in the set.
func (l *lingerSet) has(session string) bool {
	_, ok := l.until[session]
	return ok
}

// newest is the session added last, which is in the set if any is: when
// the set holds one session, it is that one.
func (l *lingerSet) newest() (string, bool) {
	if len(l.until) == 0 {
		return "", false
	}
	return l.queue[len(l.queue)-1].session, true
}

// others reports whether the set holds a session other than session.
func (l *lingerSet) others(session string) bool {
	switch len(l.until) {
	case 0:
		return false
	case 1:
		return !l.has(session)
	}
	return true
}

// each calls f with each session in the set and its expiry, soonest
// first, until f returns false.
func (l *lingerSet) each(f func(session string, until time.Time) bool) {
	for _, e := range l.queue[l.head:] {
		if u, ok := l.until[e.session]; ok && u.Equal(e.until) && !f(e.session, e.until) {
			return
		}
	}
}

// lingering returns the one session with a call that ended lately in
// either set, and how many there are: 0, 1, or 2 for more than one.
func lingering(a, b *lingerSet) (string, int) {
	sa, oka := a.newest()
	sb, okb := b.newest()
	switch {
	case !oka && !okb:
		return "", 0
	case !okb:
		return sa, min(a.size(), 2)
	case !oka:
		return sb, min(b.size(), 2)
	case a.size() == 1 && b.size() == 1 && sa == sb:
		return sa, 1
	}
	return "", 2
}

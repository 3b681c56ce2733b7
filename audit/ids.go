package audit

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"
)

// A record's id is known when its call starts (it is the Parent of the
// calls the call makes, and Finish names it), before its row is in SQLite.
// So a store reserves ids in blocks: it raises the calls table's
// AUTOINCREMENT counter (sqlite_sequence) by a block (blockSize) in a short
// transaction and hands out the ids below. SQLite never gives out an id at or below that counter, so
// no other store, nor an older lathe inserting rows one by one, can take an
// id of a reserved block. Ids of two processes writing at once interleave
// by block; ids a store did not use are given back when it closes, if no
// one reserved after it, and are otherwise left as a gap.

// idBlocks hands out reserved ids.
type idBlocks struct {
	mu sync.Mutex
	// next..end is the block being handed out (empty when next > end);
	// spare is a block reserved ahead, {0, 0} when there is none.
	next, end int64
	spare     [2]int64
	// asked says a block is being reserved ahead.
	asked bool
	// highest is the highest id handed out; last the last block reserved,
	// at lastAt.
	highest int64
	last    [2]int64
	lastAt  time.Time
}

// blockSize is how many ids the next reservation takes: idBlock, doubled
// for each block reserved within blockRenew of the one before, up to
// maxIDBlock. A store that records thousands of calls a second (a busy
// gateway) would otherwise reserve, in a transaction of its own, every few
// tens of milliseconds; one that records a call now and then reserves
// small blocks, and leaves small gaps where it cannot give ids back.
func (b *idBlocks) blockSize(now time.Time) int64 {
	n := int64(idBlock)
	if b.last[1] > 0 && now.Sub(b.lastAt) < blockRenew {
		n = min(2*(b.last[1]-b.last[0]+1), maxIDBlock)
	}
	return n
}

// take hands out an id, if one is left, and says whether to reserve the
// next block ahead.
func (b *idBlocks) take() (id int64, ok, ahead bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.next > b.end && b.spare[0] > 0 {
		b.next, b.end, b.spare = b.spare[0], b.spare[1], [2]int64{}
	}
	if b.next > b.end || b.next == 0 {
		return 0, false, false
	}
	id = b.next
	b.next++
	b.highest = max(b.highest, id)
	if b.end-b.next < idBlock/2 && b.spare[0] == 0 && !b.asked {
		b.asked = true
		ahead = true
	}
	return id, true, ahead
}

// newID returns an id for a record to be started.
func (s *Store) newID() (int64, error) {
	// Callers that find the ids run out at once all ask for a block; the
	// first reservation serves as many as it has ids, the others ask again.
	for {
		id, ok, ahead := s.ids.take()
		if ok {
			if ahead {
				select {
				case s.reqs <- request{run: s.reserveAhead}:
				default:
					s.ids.mu.Lock()
					s.ids.asked = false
					s.ids.mu.Unlock()
				}
			}
			return id, nil
		}
		if err := s.ask(context.Background(), request{run: s.reserve}); err != nil {
			return 0, err
		}
	}
}

// reserveAhead reserves the next block before the one being handed out
// runs out, so that a call seldom waits for it. A failure is not the
// call's: the block is reserved when it is needed.
func (s *Store) reserveAhead(w *writer) error {
	err := s.reserve(w)
	s.ids.mu.Lock()
	s.ids.asked = false
	s.ids.mu.Unlock()
	return err
}

// reserve reserves a block of ids, unless there are ids to hand out and a
// block in reserve already (callers that found the ids run out at once all
// ask; the first reservation serves them).
func (s *Store) reserve(w *writer) error {
	b := &s.ids
	b.mu.Lock()
	skip := b.spare[0] > 0 || (b.next > 0 && b.next <= b.end && b.end-b.next >= idBlock/2)
	now := time.Now()
	size := b.blockSize(now)
	b.mu.Unlock()
	if skip {
		return nil
	}
	var first, last int64
	err := w.tx(func() error {
		var seq, top int64
		err := w.conn.QueryRowContext(context.Background(), `SELECT seq FROM sqlite_sequence WHERE name = 'calls'`).Scan(&seq)
		noRow := errors.Is(err, sql.ErrNoRows)
		if err != nil && !noRow {
			return err
		}
		if err := w.conn.QueryRowContext(context.Background(), `SELECT coalesce(max(id), 0) FROM calls`).Scan(&top); err != nil {
			return err
		}
		first = max(seq, top) + 1
		last = first + size - 1
		if noRow {
			_, err = w.conn.ExecContext(context.Background(), `INSERT INTO sqlite_sequence (name, seq) VALUES ('calls', ?)`, last)
		} else {
			_, err = w.conn.ExecContext(context.Background(), `UPDATE sqlite_sequence SET seq = ? WHERE name = 'calls'`, last)
		}
		return err
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last, b.lastAt = [2]int64{first, last}, now
	if b.next > b.end || b.next == 0 {
		b.next, b.end = first, last
	} else {
		b.spare = [2]int64{first, last}
	}
	return nil
}

// giveBack returns the ids of the last block reserved that were not handed
// out, if no one has reserved since: then a process that made a few calls
// leaves no gap in the numbers.
func (s *Store) giveBack(w *writer) error {
	b := &s.ids
	b.mu.Lock()
	last, highest := b.last, b.highest
	b.mu.Unlock()
	if last[1] == 0 {
		return nil
	}
	_, err := w.conn.ExecContext(context.Background(), `UPDATE sqlite_sequence SET seq = ? WHERE name = 'calls' AND seq = ?`,
		max(highest, last[0]-1), last[1])
	return err
}

package lathe

import (
	"hash/maphash"
	"iter"
)

// registryShards is how many maps a registry is split into. A change copies
// only the shards it touches, so registering one tool costs about
// len/registryShards entries copied rather than every entry: tools
// registered one by one take linear time in total, not quadratic.
const registryShards = 256

// registrySeed hashes names onto shards; one per process, since the shard a
// name falls in matters only within one registry's life.
var registrySeed = maphash.MakeSeed()

// registry is an immutable snapshot of the tools; writers replace it
// (copying only the shards they change), so the hot path reads it without a
// lock.
type registry struct {
	shards [registryShards]map[string]*entry
	n      int
}

func shardOf(name string) int {
	return int(maphash.String(registrySeed, name) % registryShards)
}

// get returns the entry of the named tool.
func (r *registry) get(name string) (*entry, bool) {
	m := r.shards[shardOf(name)]
	en, ok := m[name]
	return en, ok
}

// len returns how many tools the registry holds.
func (r *registry) len() int { return r.n }

// all yields every entry, in no particular order.
func (r *registry) all() iter.Seq2[string, *entry] {
	return func(yield func(string, *entry) bool) {
		for _, m := range r.shards {
			for k, v := range m {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// edit is a registry being changed: a copy of the snapshot that shares
// every shard it has not written to yet.
type edit struct {
	next   registry
	copied [registryShards]bool
}

func (r *registry) edit() *edit {
	return &edit{next: *r}
}

// shard returns the shard of name, copied on first write.
func (ed *edit) shard(name string) map[string]*entry {
	i := shardOf(name)
	if !ed.copied[i] {
		old := ed.next.shards[i]
		m := make(map[string]*entry, len(old)+1)
		for k, v := range old {
			m[k] = v
		}
		ed.next.shards[i] = m
		ed.copied[i] = true
	}
	return ed.next.shards[i]
}

func (ed *edit) get(name string) (*entry, bool) { return ed.next.get(name) }

func (ed *edit) remove(name string) {
	if _, ok := ed.next.get(name); !ok {
		return
	}
	delete(ed.shard(name), name)
	ed.next.n--
}

func (ed *edit) put(en *entry) {
	name := en.tool.Definition.Name
	if _, ok := ed.next.get(name); !ok {
		ed.next.n++
	}
	ed.shard(name)[name] = en
}

func (ed *edit) done() *registry {
	r := ed.next
	return &r
}

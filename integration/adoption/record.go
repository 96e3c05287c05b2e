package adoption

import (
	"sort"
	"sync"
)

// Record is what a controller did, safe for concurrent use: the keys
// (namespace/name) it reconciled into the desired state and the keys it saw
// deleted.
type Record struct {
	mu         sync.Mutex // guards reconciled and deleted
	reconciled map[string]int
	deleted    map[string]bool
}

// NewRecord returns an empty Record.
func NewRecord() *Record {
	return &Record{reconciled: map[string]int{}, deleted: map[string]bool{}}
}

func (r *Record) markReconciled(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconciled[key]++
}

func (r *Record) markDeleted(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleted[key] = true
}

// Reconciled returns the sorted keys reconciled at least once.
func (r *Record) Reconciled() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return sortedKeys(r.reconciled)
}

// Deleted returns the sorted keys seen deleted.
func (r *Record) Deleted() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.deleted))
	for k := range r.deleted {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

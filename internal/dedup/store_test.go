package dedup

import (
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
)

// objectStore is a small cache of objects by namespace/name, what a Guard
// lists and a Compactor swaps in; the root package's store plays this
// part for an informer.
type objectStore struct {
	// mu guards objs.
	mu   sync.Mutex
	objs map[string]interface{}
}

func newObjectStore() *objectStore { return &objectStore{objs: map[string]interface{}{}} }

// objectKey is the key of obj in an objectStore: namespace/name.
func objectKey(obj interface{}) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetNamespace() + "/" + m.GetName(), nil
}

// add caches obj under its key, replacing what was there.
func (s *objectStore) add(obj interface{}) {
	key, err := objectKey(obj)
	if err != nil {
		panic(err) // the tests cache only objects with metadata
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = obj
}

// clear drops every object.
func (s *objectStore) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.objs)
}

func (s *objectStore) List() []interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]interface{}, 0, len(s.objs))
	for _, obj := range s.objs {
		out = append(out, obj)
	}
	return out
}

func (s *objectStore) GetByKey(key string) (interface{}, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.objs[key]
	return obj, ok, nil
}

func (s *objectStore) SwapIfHeld(key string, held, equal interface{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.objs[key]; !ok || cur != held {
		return false
	}
	s.objs[key] = equal
	return true
}

// informerOf is a Guard's view of store, whose objects are of type typ.
func informerOf(store *objectStore, typ string) Informer {
	return Informer{Objects: store.List, Key: objectKey, Type: typ}
}

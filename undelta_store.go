package cache

// UndeltaStore is a Store that turns every change into the complete state:
// after each successful Add, Update, Delete or Replace it calls PushFunc
// with the list of all stored objects. Fed by a Reflector, it lets code
// that only understands whole snapshots follow a watch.
//
// Each successful change yields exactly one PushFunc call; a failed change
// yields none. The snapshot is taken after the change, without a lock held
// across both, so concurrent changes may produce two calls with the same
// snapshot, and snapshots of concurrent changes may arrive out of order.
// PushFunc runs on the goroutine that made the change, with no lock of the
// store held; it must be safe for concurrent use if changes are. The
// objects it receives are the stored ones: treat them as read-only.
type UndeltaStore struct {
	Store
	PushFunc func([]interface{})
}

var _ Store = (*UndeltaStore)(nil)

// NewUndeltaStore returns an empty UndeltaStore that files objects under
// keyFunc's keys and pushes snapshots to pushFunc.
func NewUndeltaStore(pushFunc func([]interface{}), keyFunc KeyFunc) *UndeltaStore {
	return &UndeltaStore{Store: NewStore(keyFunc), PushFunc: pushFunc}
}

// Add stores obj, then pushes the complete state.
func (u *UndeltaStore) Add(obj interface{}) error {
	return u.pushAfter(u.Store.Add(obj))
}

// Update stores obj, then pushes the complete state.
func (u *UndeltaStore) Update(obj interface{}) error {
	return u.pushAfter(u.Store.Update(obj))
}

// Delete removes obj, then pushes the complete state.
func (u *UndeltaStore) Delete(obj interface{}) error {
	return u.pushAfter(u.Store.Delete(obj))
}

// Replace swaps the content for list, then pushes the complete state. The
// store takes list over: the caller must not use it afterwards.
func (u *UndeltaStore) Replace(list []interface{}, resourceVersion string) error {
	return u.pushAfter(u.Store.Replace(list, resourceVersion))
}

// pushAfter pushes a snapshot if the change that produced err succeeded,
// and returns err. A nil PushFunc pushes nothing.
func (u *UndeltaStore) pushAfter(err error) error {
	if err != nil {
		return err
	}
	if u.PushFunc != nil {
		u.PushFunc(u.Store.List())
	}
	return nil
}

package cache

// The change records (Delta, Deltas, DeltaType) every queue of this package
// hands out; they sit below the queues, which all refer to them.

import "errors"

// DeltaType names the kind of change a Delta records.
type DeltaType string

// The kinds of change a queue delivers.
const (
	// Added: the object was created.
	Added DeltaType = "Added"
	// Updated: the object changed.
	Updated DeltaType = "Updated"
	// Deleted: the object was deleted; it may be a DeletedFinalStateUnknown.
	Deleted DeltaType = "Deleted"
	// Replaced: the object was (re)listed by a Replace.
	Replaced DeltaType = "Replaced"
	// ReplacedAll: a whole list was replaced atomically; the Delta's
	// Object is a ReplacedAllInfo.
	ReplacedAll DeltaType = "ReplacedAll"
	// Sync: a resync, or a Replace when Replaced is not requested.
	Sync DeltaType = "Sync"
	// SyncAll: a whole-store resync delivered atomically; the Delta's Object
	// is a SyncAllInfo.
	SyncAll DeltaType = "SyncAll"
	// Bookmark: the watch reached a resource version; the Delta's Object is
	// a BookmarkInfo.
	Bookmark DeltaType = "Bookmark"
)

// Delta is one change to one object: its type and the object after the
// change (for Deleted, the last known state).
type Delta struct {
	Type   DeltaType
	Object interface{}
}

// Deltas lists the changes pending for one object, oldest first.
type Deltas []Delta

// Oldest returns the first change, or nil when there is none.
func (d Deltas) Oldest() *Delta {
	if len(d) == 0 {
		return nil
	}
	return &d[0]
}

// Newest returns the last change, or nil when there is none.
func (d Deltas) Newest() *Delta {
	if len(d) == 0 {
		return nil
	}
	return &d[len(d)-1]
}

// ErrZeroLengthDeltasObject is the cause, inside a KeyError, of asking a
// queue for the key of an empty Deltas: there is no object to take it from.
var ErrZeroLengthDeltasObject = errors.New("0 length Deltas object; can't get key")

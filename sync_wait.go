package cache

// DoneChecker watches an activity that finishes once, such as an initial
// sync.
type DoneChecker interface {
	// Name describes what is waited for; it may be computed, so keep it off
	// hot paths.
	Name() string
	// Done returns a channel that is closed when the activity finished.
	Done() <-chan struct{}
}

// IsDone reports, without blocking, whether checker's activity finished.
func IsDone(checker DoneChecker) bool {
	select {
	case <-checker.Done():
		return true
	default:
		return false
	}
}

package cache

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// capturePanic runs fn and returns what it panicked with, or nil.
func capturePanic(fn func()) (p any) {
	defer func() { p = recover() }()
	fn()
	return nil
}

// errText is err's text, or "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// panicLog records, in order, the values utilruntime.PanicHandlers saw.
type panicLog struct {
	// mu guards values.
	mu     sync.Mutex
	values []string
}

// all returns the recorded panic values, formatted.
func (l *panicLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.values)
}

// contains reports whether some recorded panic value contains s.
func (l *panicLog) contains(s string) bool {
	for _, v := range l.all() {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// keepServing turns on, for the rest of the test, the opt-in that keeps an
// informer serving after a panic (utilruntime.ReallyCrash = false), and
// records what the panic handlers see. Call it before starting goroutines
// that may panic: the cleanup restores both globals, and tests do not run
// in parallel.
func keepServing(t *testing.T) *panicLog {
	t.Helper()
	log := &panicLog{}
	oldCrash, oldHandlers := utilruntime.ReallyCrash, utilruntime.PanicHandlers
	utilruntime.ReallyCrash = false
	utilruntime.PanicHandlers = append(slices.Clone(oldHandlers), func(_ context.Context, r interface{}) {
		log.mu.Lock()
		defer log.mu.Unlock()
		log.values = append(log.values, fmt.Sprint(r))
	})
	t.Cleanup(func() {
		utilruntime.ReallyCrash, utilruntime.PanicHandlers = oldCrash, oldHandlers
	})
	return log
}

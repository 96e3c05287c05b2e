package cache

import (
	"testing"
)

// TestRealFIFO_StaysUnsyncedWhileTheInitialListIsProcessed pins a bug the
// soak test found: with UnlockWhileProcessing, a change queued while the
// first Replace's item was being processed (the reflector starts watching
// right after the list) ended the initial sync early, so an informer's
// handlers could report HasSynced before their initial list was delivered.
func TestRealFIFO_StaysUnsyncedWhileTheInitialListIsProcessed(t *testing.T) {
	for _, batch := range []bool{false, true} {
		name := "Pop"
		if batch {
			name = "PopBatch"
		}
		t.Run(name, func(t *testing.T) {
			f := NewRealFIFOWithOptions(RealFIFOOptions{
				KeyFunction: MetaNamespaceKeyFunc, AtomicEvents: true, UnlockWhileProcessing: true,
			})
			if err := f.Replace([]interface{}{testPod("ns", "a", "1")}, "1"); err != nil {
				t.Fatal(err)
			}
			var syncedDuring, initial bool
			process := func(_ interface{}, isInInitialList bool) error {
				initial = isInInitialList
				if err := f.Add(testPod("ns", "b", "2")); err != nil {
					t.Errorf("Add while processing: %v", err)
				}
				syncedDuring = f.HasSynced()
				return nil
			}
			var err error
			if batch {
				err = f.PopBatch(func(d []Delta, initial bool) error { return process(d, initial) }, process)
			} else {
				_, err = f.Pop(process)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !initial {
				t.Error("the first Replace's item was not marked as part of the initial list")
			}
			if syncedDuring {
				t.Error("HasSynced was true while the first Replace's item was still being processed")
			}
			if !f.HasSynced() {
				t.Error("HasSynced is false after the first Replace's item was processed")
			}
		})
	}
}

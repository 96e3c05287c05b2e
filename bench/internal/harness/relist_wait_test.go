package harness

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestRelistWait(t *testing.T) {
	tests := []struct {
		name    string
		updates int // notifications delivered after the resourceVersion moves
		// delay is how long the first notification comes after the
		// resourceVersion moved: longer than Settle, as when a library
		// rebuilds its cache before it tells handlers anything.
		delay   time.Duration
		expect  int64
		rv      string
		wantErr bool
	}{
		{name: "quiet relist: no notification", updates: 0, rv: "200"},
		{name: "flooding relist", updates: 50, expect: 50, rv: "200"},
		{name: "flood after a pause longer than Settle", updates: 20, delay: 300 * time.Millisecond, expect: 20, rv: "200"},
		{name: "fewer than expected: over after Stall", updates: 5, expect: 20, rv: "200"},
		{name: "resourceVersion never reaches the bump", updates: 3, rv: "150", wantErr: true},
		{name: "resourceVersion not a number", updates: 0, rv: "x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewCountingHandler(0, 0)
			var rv atomic.Value
			rv.Store("100")
			go func() {
				time.Sleep(10 * time.Millisecond)
				rv.Store(tc.rv)
				time.Sleep(tc.delay)
				for range tc.updates {
					h.OnUpdate(nil, nil)
					time.Sleep(time.Millisecond)
				}
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			last, err := RelistWait{Handler: h, SyncedRV: func() string { return rv.Load().(string) },
				MinRV: 200, Settle: 100 * time.Millisecond, Expect: tc.expect, Stall: 500 * time.Millisecond,
				Poll: time.Millisecond}.Wait(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Wait error %v, want error %t", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if got := h.Counts().Updates; got != int64(tc.updates) {
				t.Errorf("returned after %d updates, want all %d", got, tc.updates)
			}
			if last.Before(start) || time.Since(last) < 100*time.Millisecond {
				t.Errorf("last progress %v is not within the wait, settled before it", last.Sub(start))
			}
		})
	}
}

func TestNotificationsSince(t *testing.T) {
	h := NewCountingHandler(0, 0)
	h.OnAdd(nil, false)
	before := h.Counts()
	h.OnUpdate(nil, nil)
	h.OnUpdate(nil, nil)
	h.OnDelete(nil)
	if got, want := h.Counts().Since(before), (Notifications{Updates: 2, Deletes: 1}); got != want {
		t.Fatalf("Since = %+v, want %+v", got, want)
	}
}

package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPoll(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		doneAt  int // the check that reports done; 0: never
		failAt  int // the check that fails; 0: never
		wait    time.Duration
		wantErr string
		checks  int
	}{
		{name: "done at the first check", doneAt: 1, wait: time.Minute, checks: 1},
		{name: "done at the third check", doneAt: 3, wait: time.Minute, checks: 3},
		{name: "a failing check ends it", failAt: 2, wait: time.Minute, wantErr: "boom", checks: 2},
		{name: "past the wait, the last sighting", wait: 5 * time.Millisecond, wantErr: "after 5ms, saw 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			err := poll(context.Background(), tc.wait, time.Millisecond, func() (bool, string, error) {
				n++
				if n == tc.failAt {
					return false, "", boom
				}
				return n == tc.doneAt, "saw 1", nil
			})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("poll: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("poll: %v, want %q", err, tc.wantErr)
			}
			if tc.checks > 0 && n != tc.checks {
				t.Errorf("%d checks, want %d", n, tc.checks)
			}
		})
	}
}

func TestPoll_ContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := poll(ctx, time.Minute, time.Hour, func() (bool, string, error) { return false, "", nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("poll after the context ended: %v", err)
	}
}

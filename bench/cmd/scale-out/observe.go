package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"
)

// replicaState is what examples/cmd/activeactive serves at /state.
type replicaState struct {
	Identity   string            `json:"identity"`
	Claiming   bool              `json:"claiming"`
	Index      int               `json:"index"`
	Count      int               `json:"count"`
	Cached     map[string]string `json:"cached"`
	Reconciled map[string]string `json:"reconciled"`
	HeapInuse  uint64            `json:"heapInuse"`
}

// round is what one look at every live replica found.
type round struct {
	at time.Time
	// unowned and doubled count the Pods of the truth that no claiming
	// replica caches, and that two or more do.
	unowned, doubled int
	// settled: every live replica claims a range of a group of the
	// expected size, and the claiming caches are disjoint with the truth
	// as their union.
	settled bool
	states  []replicaState
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// look reads the state of every replica (one that does not answer, killed
// or not up yet, owns nothing) and judges it against truth, the keys of
// every Pod, for a group of want live replicas.
func look(ctx context.Context, rs []*replica, truth map[string]bool, want int) round {
	states := make([]replicaState, len(rs))
	ok := make([]bool, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { states[i], ok[i] = fetchState(ctx, r.stateURL) })
	}
	wg.Wait()
	rd := round{at: time.Now()}
	holders := map[string]int{}
	claiming, wrongSize := 0, false
	for i, st := range states {
		if !ok[i] || !st.Claiming {
			continue
		}
		claiming++
		wrongSize = wrongSize || st.Count != want
		for key := range st.Cached {
			holders[key]++
		}
		rd.states = append(rd.states, st)
	}
	for key := range truth {
		switch holders[key] {
		case 0:
			rd.unowned++
		case 1:
		default:
			rd.doubled++
		}
	}
	extra := 0
	for key := range holders {
		if !truth[key] {
			extra++
		}
	}
	rd.settled = claiming == want && !wrongSize && rd.unowned == 0 && rd.doubled == 0 && extra == 0
	return rd
}

func fetchState(ctx context.Context, url string) (replicaState, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return replicaState{}, false
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return replicaState{}, false
	}
	defer resp.Body.Close()
	var st replicaState
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return replicaState{}, false
	}
	return st, true
}

// phase is what one fault did to the group, from the fault until the group
// settled again.
type phase struct {
	name, replica string
	// unownedMax and doubledMax are the longest stretches during which at
	// least one Pod was unowned, or owned twice.
	unownedMax, doubledMax time.Duration
	// settle is the time from the fault until the group settled.
	settle time.Duration
	rounds int
}

func (p phase) line() string {
	return fmt.Sprintf("scale-out-fault: fault=%s replica=%s unowned-max=%.1fs double-max=%.1fs settled-after=%.1fs rounds=%d",
		p.name, p.replica, p.unownedMax.Seconds(), p.doubledMax.Seconds(), p.settle.Seconds(), p.rounds)
}

// watchUntilSettled looks at the group every interval from begin until it
// has settled for settledRounds looks in a row (or timeout passes), and
// measures the phase.
func watchUntilSettled(ctx context.Context, name, replica string, rs []*replica, truth map[string]bool, want int, begin time.Time, interval, timeout time.Duration) (phase, error) {
	p := phase{name: name, replica: replica}
	var unownedSince, doubledSince time.Time
	inARow := 0
	const settledRounds = 3
	for {
		rd := look(ctx, rs, truth, want)
		p.rounds++
		unownedSince = stretch(&p.unownedMax, unownedSince, rd.unowned > 0, rd.at)
		doubledSince = stretch(&p.doubledMax, doubledSince, rd.doubled > 0, rd.at)
		if rd.settled {
			if inARow == 0 {
				p.settle = rd.at.Sub(begin)
			}
			inARow++
			if inARow == settledRounds {
				return p, nil
			}
		} else {
			inARow = 0
		}
		if time.Since(begin) > timeout {
			return p, fmt.Errorf("%s of %s: the group did not settle in %s (last look: %d unowned, %d owned twice, %s)", name, replica, timeout, rd.unowned, rd.doubled, describe(rd))
		}
		select {
		case <-ctx.Done():
			return p, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// stretch extends the longest stretch *longest of a condition now true at
// at, which has held since since (zero: it was false before), and returns
// the new since.
func stretch(longest *time.Duration, since time.Time, now bool, at time.Time) time.Time {
	if !now {
		return time.Time{}
	}
	if since.IsZero() {
		since = at
	}
	if d := at.Sub(since); d > *longest {
		*longest = d
	}
	return since
}

func describe(rd round) string {
	var parts []string
	for _, st := range rd.states {
		parts = append(parts, fmt.Sprintf("%s %d/%d with %d", st.Identity, st.Index+1, st.Count, len(st.Cached)))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// echoServer accepts connections and writes back what it reads.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// A blackholed proxy moves no byte, keeps the connection open, and delivers
// what it held once healed.
func TestProxy_BlackholeHoldsBytesUntilHealed(t *testing.T) {
	p, err := newProxy(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	c, err := net.Dial("tcp", p.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip := func(msg string, wait time.Duration) (string, error) {
		if _, err := c.Write([]byte(msg)); err != nil {
			return "", err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(msg))
		n, err := io.ReadFull(c, buf)
		return string(buf[:n]), err
	}
	if got, err := roundTrip("before", 5*time.Second); err != nil || got != "before" {
		t.Fatalf("open proxy: got %q, %v", got, err)
	}
	p.setBlackholed(true)
	if got, err := roundTrip("during", 300*time.Millisecond); err == nil || got != "" {
		t.Fatalf("blackholed proxy let %q through (err %v)", got, err)
	}
	p.setBlackholed(false)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len("during"))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "during" {
		t.Fatalf("healed proxy: got %q, %v; want the held bytes", buf, err)
	}
}

func TestStretch_LongestRunOfTrueLooks(t *testing.T) {
	t0 := time.Unix(0, 0)
	var longest time.Duration
	var since time.Time
	for i, now := range []bool{false, true, true, true, false, true, true, false} {
		since = stretch(&longest, since, now, t0.Add(time.Duration(i)*time.Second))
	}
	if longest != 2*time.Second {
		t.Fatalf("longest = %s, want 2s (looks 1 to 3)", longest)
	}
}

// stateServer serves st at /state.
func stateServer(t *testing.T, st replicaState) *replica {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(st)
	}))
	t.Cleanup(srv.Close)
	return &replica{identity: st.Identity, stateURL: srv.URL + "/state"}
}

func TestLook_JudgesTheGroupAgainstTheTruth(t *testing.T) {
	truth := map[string]bool{"ns/a": true, "ns/b": true, "ns/c": true}
	held := func(id string, claiming bool, count int, keys ...string) replicaState {
		st := replicaState{Identity: id, Claiming: claiming, Count: count, Cached: map[string]string{}}
		for _, k := range keys {
			st.Cached[k] = "1"
		}
		return st
	}
	gone := &replica{identity: "gone", stateURL: "http://127.0.0.1:1/state"}
	tests := map[string]struct {
		states           []replicaState
		dead             bool
		want             int
		unowned, doubled int
		settled          bool
	}{
		"settled":                   {states: []replicaState{held("r0", true, 2, "ns/a"), held("r1", true, 2, "ns/b", "ns/c")}, want: 2, settled: true},
		"a killed one is none":      {states: []replicaState{held("r0", true, 2, "ns/a"), held("r1", true, 2, "ns/b", "ns/c")}, dead: true, want: 2, settled: true},
		"unowned":                   {states: []replicaState{held("r0", true, 2, "ns/a"), held("r1", true, 2, "ns/b")}, want: 2, unowned: 1},
		"owned twice":               {states: []replicaState{held("r0", true, 2, "ns/a", "ns/b"), held("r1", true, 2, "ns/b", "ns/c")}, want: 2, doubled: 1},
		"a paused one owns nothing": {states: []replicaState{held("r0", true, 1, "ns/a", "ns/b", "ns/c"), held("r1", false, 2, "ns/b")}, want: 1, settled: true},
		"wrong group size":          {states: []replicaState{held("r0", true, 3, "ns/a"), held("r1", true, 3, "ns/b", "ns/c")}, want: 2},
		"a Pod the server lacks":    {states: []replicaState{held("r0", true, 2, "ns/a", "ns/x"), held("r1", true, 2, "ns/b", "ns/c")}, want: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var rs []*replica
			for _, st := range tc.states {
				rs = append(rs, stateServer(t, st))
			}
			if tc.dead {
				rs = append(rs, gone)
			}
			rd := look(context.Background(), rs, truth, tc.want)
			if rd.unowned != tc.unowned || rd.doubled != tc.doubled || rd.settled != tc.settled {
				t.Errorf("unowned %d, doubled %d, settled %t; want %d, %d, %t", rd.unowned, rd.doubled, rd.settled, tc.unowned, tc.doubled, tc.settled)
			}
		})
	}
}

func TestSummary_TakesTheWorstFault(t *testing.T) {
	phases := []phase{
		{name: "start", unownedMax: time.Hour},
		{name: "kill", unownedMax: 7 * time.Second},
		{name: "heal", doubledMax: 2 * time.Second},
	}
	got := summary(options{pods: 10, replicas: 3}, phases, 0, nil)
	want := "scale-out: pods=10 replicas=3 faults=2 unowned-max=7.0s double-max=2.0s missed=0 union=OK disjoint=OK"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("summary\n got: %s\nwant: %s...", got, want)
	}
}

func TestScaleResult_Ratios(t *testing.T) {
	r := scaleResult{pods: 10, replicas: 5, heapSingle: 100 << 20, heapPerReplica: 25 << 20, heapMax: 30 << 20,
		reconciledSingle: 50 * time.Second, reconciledGroup: 25 * time.Second}
	if r.heapRatio() != 0.25 || r.throughputRatio() != 2 {
		t.Fatalf("heap ratio %.2f, throughput ratio %.2f; want 0.25 and 2", r.heapRatio(), r.throughputRatio())
	}
	got := summary(options{pods: 10, replicas: 3}, nil, 0, &r)
	if !strings.HasSuffix(got, "heap/replica vs single = 0.25 throughput R/1 = 2.00") {
		t.Fatalf("summary: %s", got)
	}
}

func TestReconciledAll(t *testing.T) {
	truth := map[string]bool{"ns/a": true, "ns/b": true}
	rd := round{states: []replicaState{{Reconciled: map[string]string{"ns/a": "1"}}, {Reconciled: map[string]string{"ns/b": "2"}}}}
	if !reconciledAll(rd, truth) {
		t.Fatal("both Pods were reconciled")
	}
	rd.states = rd.states[:1]
	if reconciledAll(rd, truth) {
		t.Fatal("ns/b was not reconciled")
	}
}

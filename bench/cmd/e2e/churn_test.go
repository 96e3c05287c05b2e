package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestChurnChildLink(t *testing.T) {
	tests := map[string]struct {
		parent     string // what the parent writes on the child's stdin
		wantBegin  string // error Begin returns, "" for none
		wantEnd    string // error End returns, "" for none
		wantEvents int64
	}{
		"begin, then the count":        {parent: "begin\nend 42\n", wantEvents: 42},
		"no updates made":              {parent: "begin\nend 0\n"},
		"the parent died before begin": {parent: "", wantBegin: "closed the pipe"},
		"the parent died in the churn": {parent: "begin\nen", wantEnd: `closed the pipe (read "en")`},
		"something else than begin":    {parent: "go\n", wantBegin: `got "go" from the parent, want "begin"`},
		"an end without a count":       {parent: "begin\nend\n", wantEnd: `got "end" from the parent`},
		"a negative count":             {parent: "begin\nend -1\n", wantEnd: `got "end -1" from the parent`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var out strings.Builder
			l := churnChildLink{in: bufio.NewReader(strings.NewReader(tt.parent)), out: &out}
			err := l.Begin(context.Background())
			if out.String() != churnReady+"\n" {
				t.Errorf("child wrote %q, want %q", out.String(), churnReady+"\n")
			}
			if !errorContains(err, tt.wantBegin) {
				t.Fatalf("Begin: %v, want an error containing %q", err, tt.wantBegin)
			}
			if err != nil {
				return
			}
			n, err := l.End(context.Background())
			if !errorContains(err, tt.wantEnd) {
				t.Fatalf("End: %v, want an error containing %q", err, tt.wantEnd)
			}
			if n != tt.wantEvents {
				t.Errorf("End = %d, want %d", n, tt.wantEvents)
			}
		})
	}
}

// errorContains reports whether err is nil and want "", or err's text
// contains want.
func errorContains(err error, want string) bool {
	if want == "" || err == nil {
		return want == "" && err == nil
	}
	return strings.Contains(err.Error(), want)
}

func TestParseOptionsChurn(t *testing.T) {
	env := []string{"-kubeconfig=k", "-control=http://c"}
	tests := map[string]struct {
		args         []string
		wantDuration time.Duration
		wantRate     float64
		wantErr      string
	}{
		"defaults":                     {wantDuration: time.Minute, wantRate: 50},
		"quick: short and slow":        {args: []string{"-quick"}, wantDuration: 10 * time.Second, wantRate: 20},
		"quick keeps an asked rate":    {args: []string{"-quick", "-churn-rate=5"}, wantDuration: 10 * time.Second, wantRate: 5},
		"quick keeps an asked 0":       {args: []string{"-quick", "-churn=0"}, wantRate: 20},
		"asked duration and rate":      {args: []string{"-churn=2m", "-churn-rate=100"}, wantDuration: 2 * time.Minute, wantRate: 100},
		"a rate too low for one write": {args: []string{"-churn=1s", "-churn-rate=0.5"}, wantErr: "makes no update"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parseOptions(append(tt.args, env...), io.Discard)
			if !errorContains(err, tt.wantErr) {
				t.Fatalf("parseOptions: %v, want an error containing %q", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if o.churn.Duration != tt.wantDuration || o.churn.Rate != tt.wantRate {
				t.Errorf("churn %s at %g/s, want %s at %g/s", o.churn.Duration, o.churn.Rate, tt.wantDuration, tt.wantRate)
			}
			if o.churn.Pods != o.pods || o.churn.Layout != o.layout || o.churn.Workers != o.workers {
				t.Errorf("churn over %d pods of %+v with %d writers, want the run's %d, %+v, %d",
					o.churn.Pods, o.churn.Layout, o.churn.Workers, o.pods, o.layout, o.workers)
			}
		})
	}
}

// Package specs reads the JSON reports of a Ginkgo suite and the test2json
// stream of the same test binary, counts outcomes, and compares runs of one
// suite made with different builds (variants).
package specs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// State is one spec's outcome, reduced to the four that matter here.
type State string

// The outcomes a spec is counted under. Ginkgo's panicked, interrupted,
// aborted and timedout are all Failed; a spec skipped by a focus or label
// filter (no failure message) is Filtered, one skipped by Skip() is Skipped.
const (
	Passed   State = "passed"
	Failed   State = "failed"
	Skipped  State = "skipped"
	Filtered State = "filtered"
	Pending  State = "pending"
)

// Spec is one leaf spec (an It) of a suite run.
type Spec struct {
	Name    string // container texts and leaf text joined by " / "
	State   State
	Message string // first line of the failure or skip message, if any
	// Retried is set when the spec passed only on a later attempt (the
	// suite ran with Ginkgo's flake-attempts).
	Retried bool
}

// ginkgoReport is the part of Ginkgo's types.Report this package reads.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		State                   string
		NumAttempts             int
		Failure                 struct {
			Message string
		}
	}
}

// ReadGinkgo reads a Ginkgo JSON report (a list of suite reports) and
// returns its leaf specs in report order. Setup nodes (BeforeSuite,
// AfterSuite, ...) that failed are returned too, as failed specs named after
// their node type, so a suite that broke outside its specs does not look
// clean.
func ReadGinkgo(r io.Reader) ([]Spec, error) {
	var suites []ginkgoReport
	if err := json.NewDecoder(r).Decode(&suites); err != nil {
		return nil, fmt.Errorf("decode ginkgo report: %w", err)
	}
	var out []Spec
	for _, suite := range suites {
		for _, sr := range suite.SpecReports {
			state, err := reduce(sr.State, sr.Failure.Message)
			if err != nil {
				return nil, fmt.Errorf("spec %q: %w", sr.LeafNodeText, err)
			}
			name := strings.Join(append(append([]string{}, sr.ContainerHierarchyTexts...), sr.LeafNodeText), " / ")
			if sr.LeafNodeType != "It" {
				if state != Failed {
					continue
				}
				name = sr.LeafNodeType
			}
			out = append(out, Spec{Name: name, State: state, Message: firstLine(sr.Failure.Message),
				Retried: state == Passed && sr.NumAttempts > 1})
		}
	}
	return out, nil
}

func reduce(state, message string) (State, error) {
	switch state {
	case "passed":
		return Passed, nil
	case "failed", "panicked", "interrupted", "aborted", "timedout":
		return Failed, nil
	case "skipped":
		if message == "" {
			return Filtered, nil
		}
		return Skipped, nil
	case "pending":
		return Pending, nil
	}
	return "", fmt.Errorf("unknown ginkgo state %q", state)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// testEvent is one line of `go tool test2json` output.
type testEvent struct {
	Action string
	Test   string
}

// ReadTest2JSON reads a test2json stream and returns the final outcome of
// every named test (subtests included), keyed by name, as Passed, Failed or
// Skipped. Lines that are not JSON (a crashed binary's last words) are
// ignored; a test that started and never ended counts as Failed.
func ReadTest2JSON(r io.Reader) (map[string]State, error) {
	out := make(map[string]State)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var ev testEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		switch ev.Action {
		case "run":
			if _, seen := out[ev.Test]; !seen {
				out[ev.Test] = Failed
			}
		case "pass":
			out[ev.Test] = Passed
		case "fail":
			out[ev.Test] = Failed
		case "skip":
			out[ev.Test] = Skipped
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read test2json stream: %w", err)
	}
	return out, nil
}

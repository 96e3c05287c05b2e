// Package racesafe keeps race-enabled test binaries that use
// testing/synctest clear of a crash in Go 1.26's race runtime.
//
// On Go 1.26, a timer that fires inside a synctest bubble is run under one
// race context that belongs to the bubble, whichever thread runs it. Two
// goroutines of the same bubble on two threads (one receiving from an expired
// timer's channel, another advancing the bubble's clock) then use that
// context at once, and ThreadSanitizer's own state breaks: the test binary
// dies with "ThreadSanitizer: CHECK failed" in tsan_rtl.cpp, no race report,
// no test named (golang/go#78156). Go 1.27 runs bubble timers under the
// race context of the processor instead, and the crash is gone.
//
// Importing this package for its side effect, from a test file of each
// package whose tests use synctest, limits such a binary to one processor
// when it is built with -race on a Go older than 1.27. With one processor no
// two goroutines run at once, so the shared context is never used twice at
// the same time. The race detector still sees every unsynchronised access:
// it tracks happens-before, not overlap in time. Binaries built without
// -race, or on Go 1.27 and later, are not changed.
package racesafe

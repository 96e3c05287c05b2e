//go:build race && !go1.27

package racesafe

import "runtime"

// init runs before the testing package reads GOMAXPROCS for its default -cpu
// list, so every test of the binary runs on one processor unless -cpu says
// otherwise.
func init() {
	runtime.GOMAXPROCS(1)
}

// limited reports that this build limits the binary to one processor.
const limited = true

//go:build !race || go1.27

package racesafe

// limited reports that this build leaves the processor count alone.
const limited = false

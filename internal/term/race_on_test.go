//go:build race

package term

// raceOn: timings mean little under the race detector (5-10x slower).
const raceOn = true

//go:build race

package main

// raceScale stretches the quick run's deadline: under the race detector
// the daemon and the CLI run 5-10x slower, more on a loaded machine.
const raceScale = 5

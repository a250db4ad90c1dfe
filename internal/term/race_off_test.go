//go:build !race

package term

const raceOn = false

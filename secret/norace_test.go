//go:build !race

package secret_test

const raceEnabled = false

//go:build !race

package remote

// raceDetector: see race_on_test.go.
const raceDetector = false

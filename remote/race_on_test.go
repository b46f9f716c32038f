//go:build race

package remote

// raceDetector: the race detector's shadow memory multiplies a test's
// RSS (about ten times a buffer's size) and its time: bounds of peak RSS
// scale with it, and endless inputs are shorter.
const raceDetector = true

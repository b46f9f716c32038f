// Package layering holds no code: its test enforces DESIGN.md's import
// rules ("Packages (rooms) and what each may touch") with go list.
package layering

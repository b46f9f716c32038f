// Package layering holds no code: its tests enforce ARCHITECTURE.md's import
// rules and keep its package table true, with go list.
package layering

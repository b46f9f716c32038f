// Package testawk finds the awks (and the busybox userland) a host may
// read with, for tests that run host-side scripts under each of them.
package testawk

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Dirs is a directory per awk a host may run, to put first on PATH: the
// machine's awk, mawk, gawk (and gawk --posix: no extension may be used),
// the one true awk, and busybox with its own sh, xargs, stat and the rest,
// as a small image has them. The ones not installed here are left out;
// the machine's awk is always there, and no awk at all fails the test.
func Dirs(t testing.TB) map[string]string {
	t.Helper()
	out := map[string]string{}
	shim := func(name string, files map[string]string) {
		dir := t.TempDir()
		for f, body := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("#!/bin/sh\nexec "+body+` "$@"`+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		out[name] = dir
	}
	awk, err := exec.LookPath("awk")
	if err != nil {
		t.Fatal("no awk: the host's scripts need one")
	}
	shim("awk", map[string]string{"awk": awk})
	for _, a := range []string{"mawk", "gawk", "original-awk", "nawk"} {
		if p, err := exec.LookPath(a); err == nil {
			shim(a, map[string]string{"awk": p})
		}
	}
	if p, err := exec.LookPath("gawk"); err == nil {
		shim("gawk --posix", map[string]string{"awk": p + " --posix"})
	}
	if p, err := exec.LookPath("busybox"); err == nil {
		bb := map[string]string{}
		for _, c := range []string{"awk", "sh", "tail", "head", "xargs", "stat", "cat", "cmp", "wc", "mv"} {
			bb[c] = p + " " + c
		}
		shim("busybox", bb)
	}
	return out
}

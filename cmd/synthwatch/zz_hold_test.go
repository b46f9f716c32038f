package main

import (
	"strconv"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

func BenchmarkZZHold(b *testing.B) {
	hb := newHabitBench(b)
	hb.px.SetDelay(25 * time.Millisecond)
	o := hb.ours("status")
	os.WriteFile("/tmp/hold/ours", []byte(strings.Join(o.Args[2:], "\n")), 0o644)
	os.WriteFile("/tmp/hold/habit", []byte(strings.Join(hb.habit.Args, "\n")), 0o644)
	os.WriteFile("/tmp/hold/env", []byte(strings.Join(hb.extra, "\n")), 0o644)
	os.WriteFile("/tmp/hold/bin", []byte(hb.bin), 0o644)
	for range 15000 {
		if d, err := os.ReadFile("/tmp/hold/delay"); err == nil {
			if ms, err := strconv.Atoi(strings.TrimSpace(string(d))); err == nil {
				hb.px.SetDelay(time.Duration(ms) * time.Millisecond / 2)
			}
		}
		os.WriteFile("/tmp/hold/turns", []byte(fmt.Sprintln(hb.px.Turns.Load(), hb.px.Bytes.Load())), 0o644)
		time.Sleep(200 * time.Millisecond)
	}
	for b.Loop() {}
}

package main

import (
	"os"
	"os/signal"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"
)

// followStops makes stops the program did not ask for behave as its
// ctrl+z does, until done closes:
//   - SIGTSTP sent from outside (kill -TSTP, a job control script) while
//     the terminal is in the dashboard's raw mode: the program is asked to
//     suspend, so it gives the terminal back first (a default stop left it
//     raw for the shell, and cooked for the dashboard after fg). The
//     program's own stop is a TSTP too, which then finds the terminal
//     cooked: the process stops by SIGSTOP, as TSTP's default would have
//     stopped it (once a Go program has asked for TSTP, the runtime keeps
//     its handler even after signal.Reset, and a TSTP is dropped).
//   - SIGCONT after any stop (kill -STOP, a debugger, the above): a
//     repaint and a poll, not a blank screen until a resize.
func followStops(p *tea.Program, done <-chan struct{}) {
	cont := make(chan os.Signal, 1)
	tstp := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	signal.Notify(tstp, syscall.SIGTSTP)
	go func() {
		defer signal.Stop(cont)
		defer signal.Stop(tstp)
		for {
			select {
			case <-tstp:
				if rawTerminal() {
					p.Send(tea.SuspendMsg{})
				} else {
					_ = syscall.Kill(0, syscall.SIGSTOP) // the process group, as the terminal's stop
				}
			case <-cont:
				p.Send(tea.ResumeMsg{})
			case <-done:
				return
			}
		}
	}()
}

// rawTerminal says whether stdin is a terminal in raw mode (no canonical
// line editing): the dashboard holds it.
func rawTerminal() bool {
	t, err := unix.IoctlGetTermios(int(os.Stdin.Fd()), unix.TCGETS)
	return err == nil && t.Lflag&unix.ICANON == 0
}

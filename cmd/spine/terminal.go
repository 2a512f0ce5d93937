package main

import "os"

// isTerminal reports whether f is a terminal (a tty or pty, as `docker run
// -t` gives): serve prints a development token only there, and progress
// lines are drawn only there. A character device is not enough: /dev/null
// is one, and a token printed to it by a service manager would be a token
// in whatever it is redirected to next.
func isTerminal(f *os.File) bool { return termios(f.Fd()) }

//go:build linux || darwin

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// termWidth is the number of columns of the terminal f, or 0 if it cannot be told.
func termWidth(f *os.File) int {
	var ws struct{ rows, cols, x, y uint16 }
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TIOCGWINSZ, uintptr(unsafe.Pointer(&ws))); e != 0 {
		return 0
	}
	return int(ws.cols)
}

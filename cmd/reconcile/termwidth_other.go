//go:build !linux && !darwin

package main

import "os"

// termWidth is the number of columns of the terminal f, or 0 if it cannot be told: here it
// cannot, and the progress line keeps to 80.
func termWidth(*os.File) int { return 0 }

//go:build !linux

package main

import "time"

// threadCPU is not measured here.
func threadCPU() (time.Duration, bool) { return 0, false }

func pinThread() func() { return func() {} }

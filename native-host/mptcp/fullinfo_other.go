//go:build !linux

package mptcp

// MaxSubflows is the subflow array size asked of the kernel.
const MaxSubflows = 8

// GetFullInfo is unavailable outside Linux.
func GetFullInfo(fd int) (FullInfo, error) { return FullInfo{}, ErrUnsupported }

package mptcp

import "errors"

// ErrNoPM means the kernel has no mptcp_pm generic netlink family: MPTCP is not built in (CONFIG_MPTCP).
var ErrNoPM = errors.New("mptcp: kernel lacks the MPTCP path manager (no generic netlink family mptcp_pm; CONFIG_MPTCP off?)")

// ErrUnsupported is returned on operating systems without Linux's MPTCP path manager.
var ErrUnsupported = errors.New("mptcp: the MPTCP path manager is Linux-only")

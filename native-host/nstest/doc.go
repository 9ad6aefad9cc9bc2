// Package nstest gives real-kernel tests network namespaces of their own: created with iproute2, joined by veth
// pairs, entered on a locked OS thread, and deleted by the test's cleanup. Tests that use it need root, kernel
// MPTCP and iproute2, and NeedRoot skips them with the reason when one is missing. It is for tests only.
package nstest

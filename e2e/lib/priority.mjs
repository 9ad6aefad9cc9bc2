// The parts of the testbed that stand for other machines (the link emulators, the origin server, the proxy) run at
// a higher CPU priority than the client (browser, native host, helper), which is what a grid measures. The link
// emulation is in user space: on a busy 2-core machine a starved emulator held packets back, TCP timed out and
// retransmitted on a lossless link (a 601 kB page sent 40 kB twice), and whichever mode happened to load beside
// the CPU spike looked slower. A real link and a real server do not share the client's CPU.
export const REMOTE_NICE = -10;
export const asRemote = (argv) => ['nice', '-n', String(REMOTE_NICE), ...argv];

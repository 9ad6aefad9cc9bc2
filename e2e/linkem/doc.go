// Package linkem emulates a network link in user space, the way Mahimahi's
// mm-delay and mm-link do: packets are read from one TUN device, held for as
// long as the emulated link would hold them, and written to another TUN device.
//
// Each direction of a link has a one-way delay, a rate (constant Mbit/s or a
// Mahimahi packet-delivery trace), random loss and a byte-limited drop-tail
// queue. The order of the stages puts the rate stage and its queue next to the
// client in both directions, as when mm-link runs inside mm-delay:
//
//	downlink (router -> client): loss, delay, queue + rate, client
//	uplink   (client -> router): loss, queue + rate, delay, router
//
// This mirrors where the buffer sits on a real wireless hop: the access point
// or base station queues downlink packets just before the radio, the phone
// queues uplink packets before its own radio, and the rest of the path only
// adds propagation delay. For a single bottleneck with a constant delay the
// order changes neither throughput nor RTT; it changes when the client-side
// radio is busy, which is what the per-packet timeline records.
//
// Because the delay is constant and the queue is FIFO, a packet's delivery
// time is known when it arrives and delivery times never decrease. The model
// (Shaper) is therefore a pure function of arrival times, tested with a fake
// clock, and the runtime (Link) needs only a FIFO per direction, one reader
// goroutine and one scheduler goroutine that sleeps until absolute deadlines
// on a timerfd (Go timers round to whole milliseconds in the runtime poller).
//
// Timeline files (one per link, `<iface>.csv`) have no header; every line is
// `t_unix_ns,dir,bytes` with dir `d` for a downlink packet delivered to the
// client and `u` for an uplink packet taken from the client's TUN device.
package linkem

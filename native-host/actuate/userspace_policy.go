package actuate

import (
	"errors"
	"net/netip"
	"slices"
	"time"
)

// The userspace backend's policy table: origins' decisions by destination address, connections' own decisions,
// and the θ1 group a connection counts in.

// noCap is a policy's θ2 when the decision sets no cellular byte cap.
const noCap = -1

// addrPolicy is an origin's decision as it applies to one destination address.
type addrPolicy struct {
	multipath bool
	theta1    int64 // open the cellular subflow once the connection has received this many bytes; 0: at once
	theta2    int64 // close the cellular subflow once it has carried this many bytes; noCap: never
	uid       uint32
	group     uint32 // the θ1 group the address's bytes count in (OriginPolicy.Group); 0: its own
	// preferCell: once the cellular subflow is established, the initial (WiFi) subflow becomes backup
	// (OriginPolicy.PreferCellular).
	preferCell bool
}

// group is the connections one θ1 counts together: one owner's to the addresses of one page's decision (the
// origin and the third parties its pages reached, under one OriginPolicy.Group), or to one destination address
// when the decision names no group.
type group struct {
	addr netip.Addr // zero when id is set
	id   uint32
	uid  uint32
}

// groupOf is the connection's θ1 group, and false when it has none: its owner is unknown, or it has a decision
// of its own (set-conn-policy) that names no group, so it counts alone. Caller holds u.mu.
func (u *userspaceBackend) groupOf(c *conn) (group, bool) {
	if !c.uidKnown {
		return group{}, false
	}
	if e, own := u.connPol[flow{c.initial, c.dst}]; own && e.p.uid == c.uid {
		return group{id: e.p.group, uid: c.uid}, e.p.group != 0
	}
	// Only the owner's own decision puts its connections in a named group: another user's policy for the same
	// address must not make them count with this user's other connections.
	if e := u.policy[c.dst.Addr()]; e != nil {
		if ap := e.Value.(*addrEntry).p; ap.group != 0 && ap.uid == c.uid {
			return group{id: ap.group, uid: c.uid}, true
		}
	}
	return group{addr: c.dst.Addr(), uid: c.uid}, true
}

// policyOf is the decision that applies to the connection: its own (set-conn-policy, own true), else its owner's
// for its destination address, else none (the zero addrPolicy: single path). Caller holds u.mu.
func (u *userspaceBackend) policyOf(c *conn) (p addrPolicy, own bool) {
	if e, ok := u.connPol[flow{c.initial, c.dst}]; ok && c.uidKnown && e.p.uid == c.uid {
		return e.p, true
	}
	if e := u.policy[c.dst.Addr()]; e != nil && c.uidKnown && e.Value.(*addrEntry).p.uid == c.uid {
		return e.Value.(*addrEntry).p, false
	}
	return addrPolicy{}, false
}

// flow keys a TCP socket by its two ends.
type flow struct{ local, remote netip.AddrPort }

// addrEntry is one address's policy in polOrder.
type addrEntry struct {
	addr netip.Addr
	p    addrPolicy
}

// setAddr sets one address's policy, forgetting the least recently set address beyond maxAddrPolicies. Caller
// holds u.mu.
func (u *userspaceBackend) setAddr(a netip.Addr, p addrPolicy) {
	if e := u.policy[a]; e != nil {
		e.Value.(*addrEntry).p = p
		u.polOrder.MoveToFront(e)
		return
	}
	if u.polOrder.Len() >= maxAddrPolicies {
		old := u.polOrder.Back()
		delete(u.policy, old.Value.(*addrEntry).addr)
		u.polOrder.Remove(old)
		u.stats.AddrsForgotten++
	}
	u.policy[a] = u.polOrder.PushFront(&addrEntry{addr: a, p: p})
}

func (u *userspaceBackend) SetOrigin(p OriginPolicy) error {
	ap := addrPolicy{multipath: p.Multipath, theta1: p.Theta1, theta2: noCap, uid: p.UID, group: p.Group, preferCell: p.PreferCellular}
	if p.Theta2 != nil {
		ap.theta2 = *p.Theta2
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, a := range p.Addrs {
		u.setAddr(a, ap)
	}
	// Connections that opened before the decision arrived follow it too. One that turns an address single path
	// closes the cellular subflows its owner's open connections to it have (say, opened under another page's
	// decision that reported the address first): the later, own decision holds.
	var errs []error
	sums := u.groupRx()
	for tok, c := range u.conns {
		if !ap.multipath && c.subflow.IsValid() && c.uidKnown && c.uid == ap.uid && slices.Contains(p.Addrs, c.dst.Addr()) {
			u.pm.SetDeadline(time.Now().Add(2 * time.Second))
			if err := u.pm.SubflowDestroy(tok, c.subflow, c.dst); err != nil {
				errs = append(errs, err)
			}
			c.rec.Multipath = false
		}
		u.maybeCreate(tok, c, sums, nil)
	}
	return errors.Join(errs...)
}

// connEntry is one connection's own policy: whose it is (p.uid), when it was set, and whether an MPTCP connection
// with its two ends has been seen since (bound); an entry that is never bound is dropped after connPolUnbound.
type connEntry struct {
	p     addrPolicy
	at    time.Time
	bound bool
}

// connPolUnbound is how long a per-connection policy waits for its MPTCP connection. The caller sets it for a
// connection that exists already (the server checks its owner through sock_diag), so its CREATED event is at most
// on its way; a connection that never becomes an MPTCP one (a proxy leg that fell back to TCP) would otherwise
// leave its policy behind for good, for the next connection that happens to have the same ends.
const connPolUnbound = 5 * time.Second

// bindConnPol marks the policy of a new MPTCP connection's two ends as taken by it, or drops it when it waited
// longer than connPolUnbound: then it was set for another connection that has gone. It also drops every other
// entry that waited too long. Caller holds u.mu.
func (u *userspaceBackend) bindConnPol(f flow, now time.Time) {
	for k, e := range u.connPol {
		if !e.bound && now.Sub(e.at) > connPolUnbound {
			delete(u.connPol, k)
		}
	}
	if e, ok := u.connPol[f]; ok {
		e.bound = true
		u.connPol[f] = e
	}
}

// SetConn gives one connection its own decision. The connection may already be known (the usual order: the
// caller learns its local port once connected) or not yet (its CREATED event is still on the way).
func (u *userspaceBackend) SetConn(p ConnPolicy) error {
	ap := addrPolicy{multipath: p.Multipath, theta1: p.Theta1, theta2: noCap, uid: p.UID, group: p.Group, preferCell: p.PreferCellular}
	if p.Theta2 != nil {
		ap.theta2 = *p.Theta2
	}
	key := flow{p.Local, p.Remote}
	now := time.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.bindConnPol(flow{}, now) // drops the entries that waited too long
	if _, ok := u.connPol[key]; !ok && len(u.connPol) >= MaxConnPolicies {
		// Entries of connections that never showed up go first.
		open := map[flow]bool{}
		for _, c := range u.conns {
			open[flow{c.initial, c.dst}] = true
		}
		for k := range u.connPol {
			if !open[k] {
				delete(u.connPol, k)
			}
		}
		if len(u.connPol) >= MaxConnPolicies {
			return errorf(CodeBadArgument, "more than %d connections with their own policy", MaxConnPolicies)
		}
	}
	e := connEntry{p: ap, at: now}
	for _, c := range u.conns {
		if c.initial == p.Local && c.dst == p.Remote && (!c.uidKnown || c.uid == p.UID) {
			e.bound = true
		}
	}
	u.connPol[key] = e
	for tok, c := range u.conns {
		if c.initial == p.Local && c.dst == p.Remote {
			u.maybeCreate(tok, c, nil, nil)
		}
	}
	return nil
}

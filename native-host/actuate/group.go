package actuate

import (
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"time"
)

// groupTTL is how long a uid's membership is believed: a user added to the group (adduser alice mpsurf) is
// served within this long, without a restart of the helper or a new login of the user, since the helper reads
// the group database itself rather than the peer's credentials, which carry supplementary groups only from login.
// It also bounds the lookups a flood of connections from one refused uid can cause to one per uid per groupTTL.
const groupTTL = 5 * time.Second

// groupMembers answers whether a peer belongs to one group: its primary gid (SO_PEERCRED) is the group's, or
// the group database lists the peer's user as a member. Lookups go through os/user (the system's NSS with cgo,
// /etc/passwd and /etc/group without).
type groupMembers struct {
	name string
	// groupsOf returns the gids of a uid's groups, primary and supplementary, and its primary gid; tests replace it.
	groupsOf func(uid uint32) ([]string, error)
	gidOf    func(name string) (string, error)

	mu    sync.Mutex
	gid   string
	gidAt time.Time
	uids  map[uint32]cachedMembership
}

type cachedMembership struct {
	member bool
	at     time.Time
}

func newGroupMembers(name string) *groupMembers {
	return &groupMembers{
		name: name,
		groupsOf: func(uid uint32) ([]string, error) {
			u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
			if err != nil {
				return nil, err
			}
			return u.GroupIds()
		},
		gidOf: func(name string) (string, error) {
			g, err := user.LookupGroup(name)
			if err != nil {
				return "", err
			}
			return g.Gid, nil
		},
		uids: map[uint32]cachedMembership{},
	}
}

// check resolves the group now: the helper refuses to start for a group that does not exist.
func (g *groupMembers) check() error {
	if _, err := g.gidOf(g.name); err != nil {
		return fmt.Errorf("--allow-group %s: %w", g.name, err)
	}
	return nil
}

func (g *groupMembers) member(p Peer, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gid == "" || now.Sub(g.gidAt) > groupTTL {
		gid, err := g.gidOf(g.name)
		if err != nil {
			return false // the group was removed: no one is a member
		}
		g.gid, g.gidAt = gid, now
	}
	if strconv.FormatUint(uint64(p.Gid), 10) == g.gid {
		return true
	}
	if c, ok := g.uids[p.Uid]; ok && now.Sub(c.at) <= groupTTL {
		return c.member
	}
	gids, err := g.groupsOf(p.Uid)
	member := err == nil && slices.Contains(gids, g.gid)
	if len(g.uids) >= maxUIDs {
		clear(g.uids) // a bound, not an LRU: a flood of uids costs lookups, never memory
	}
	g.uids[p.Uid] = cachedMembership{member, now}
	return member
}

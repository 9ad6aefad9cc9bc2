package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/netip"
	"time"
)

// Peer is a third-party host and address that a page of an origin reached, and when it was last reported.
type Peer struct {
	Host string
	Addr netip.Addr
	Time time.Time
}

// MaxPeersPerOrigin bounds what is kept per origin: the helper takes at most 32 addresses per policy
// (actuate.MaxAddrs), so more could never be used.
const MaxPeersPerOrigin = 32

// maxHostLen is a DNS name's longest text form (RFC 1035 §2.3.4: 255 octets on the wire, 253 written out).
const maxHostLen = 253

// SavePeers remembers peers reported for origin at at (newer reports of an address replace older ones), keeps the
// origin's MaxPeersPerOrigin most recent, and drops every origin's peers older than the log's retention age.
func (s *Store) SavePeers(ctx context.Context, at time.Time, origin string, peers []Peer) error {
	if len(peers) == 0 {
		return nil
	}
	if err := checkOrigin(origin); err != nil {
		return err
	}
	for _, p := range peers {
		if !p.Addr.IsValid() || p.Host == "" || len(p.Host) > maxHostLen {
			return fmt.Errorf("store: peer %q %v: want a host name of 1 to %d characters and an address", p.Host, p.Addr, maxHostLen)
		}
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, p := range peers {
			if _, err := tx.ExecContext(ctx, `INSERT INTO peers (origin, addr, host, time_ms) VALUES (?, ?, ?, ?)
				ON CONFLICT (origin, addr) DO UPDATE SET host = excluded.host, time_ms = excluded.time_ms`,
				origin, p.Addr.Unmap().String(), p.Host, at.UnixMilli()); err != nil {
				return fmt.Errorf("store: peers: %w", err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM peers WHERE origin = ? AND addr NOT IN
			(SELECT addr FROM peers WHERE origin = ? ORDER BY time_ms DESC, addr LIMIT ?)`, origin, origin, MaxPeersPerOrigin); err != nil {
			return fmt.Errorf("store: peers: %w", err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM peers WHERE time_ms < ?", s.opt.Now().Add(-s.opt.MaxAge).UnixMilli()); err != nil {
			return fmt.Errorf("store: peers: %w", err)
		}
		return nil
	})
}

// Peers returns origin's peers reported at or after since, newest first.
func (s *Store) Peers(ctx context.Context, origin string, since time.Time) ([]Peer, error) {
	var out []Peer
	err := s.with(func(db *sql.DB) error {
		rows, err := db.QueryContext(ctx, `SELECT host, addr, time_ms FROM peers WHERE origin = ? AND time_ms >= ?
			ORDER BY time_ms DESC, addr LIMIT ?`, origin, since.UnixMilli(), MaxPeersPerOrigin)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p Peer
			var addr string
			var ms int64
			if err := rows.Scan(&p.Host, &addr, &ms); err != nil {
				return err
			}
			a, err := netip.ParseAddr(addr)
			if err != nil {
				continue // a row written by hand; it names no address the helper could take
			}
			p.Addr, p.Time = a, time.UnixMilli(ms)
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: peers: %w", err)
	}
	return out, nil
}

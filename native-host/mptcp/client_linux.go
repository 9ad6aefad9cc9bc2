//go:build linux

package mptcp

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// Client is a genetlink socket bound to the mptcp_pm family in one network namespace. It is not safe for
// concurrent use; open one per goroutine (they are cheap).
type Client struct {
	c   *genetlink.Conn
	fam genetlink.Family
}

// dialFamily opens a generic netlink socket in the namespace netns (0: the calling thread's) and resolves the
// mptcp_pm family on it; ErrNoPM when the kernel lacks it.
func dialFamily(netns int) (*genetlink.Conn, genetlink.Family, error) {
	c, err := genetlink.Dial(&netlink.Config{NetNS: netns})
	if err != nil {
		return nil, genetlink.Family{}, fmt.Errorf("mptcp: genetlink socket: %w", err)
	}
	fam, err := c.GetFamily(FamilyName)
	if err != nil {
		c.Close()
		if errors.Is(err, os.ErrNotExist) {
			return nil, genetlink.Family{}, ErrNoPM
		}
		return nil, genetlink.Family{}, fmt.Errorf("mptcp: resolve family %s: %w", FamilyName, err)
	}
	return c, fam, nil
}

// Dial opens a client in the network namespace of the file descriptor netns (as from opening
// /run/netns/NAME or /proc/PID/ns/net), or in the calling thread's namespace when netns is 0.
func Dial(netns int) (*Client, error) {
	c, fam, err := dialFamily(netns)
	if err != nil {
		return nil, err
	}
	return &Client{c: c, fam: fam}, nil
}

// Close releases the socket.
func (c *Client) Close() error { return c.c.Close() }

// SetDeadline bounds every later request and receive; the kernel answers commands at once, so a deadline
// only guards against a wedged socket.
func (c *Client) SetDeadline(t time.Time) error { return c.c.SetDeadline(t) }

func (c *Client) exec(cmd uint8, body []byte, flags netlink.HeaderFlags) ([]genetlink.Message, error) {
	msg := genetlink.Message{Header: genetlink.Header{Command: cmd, Version: c.fam.Version}, Data: body}
	msgs, err := c.c.Execute(msg, c.fam.ID, netlink.Request|flags)
	if err != nil {
		return nil, commandError(cmd, err)
	}
	return msgs, nil
}

var cmdNames = map[uint8]string{
	cmdAddAddr: "ADD_ADDR", cmdDelAddr: "DEL_ADDR", cmdGetAddr: "GET_ADDR", cmdFlushAddrs: "FLUSH_ADDRS",
	cmdSetLimits: "SET_LIMITS", cmdGetLimits: "GET_LIMITS", cmdSetFlags: "SET_FLAGS",
	cmdSubflowCreate: "SUBFLOW_CREATE", cmdSubflowDestroy: "SUBFLOW_DESTROY",
}

// commandError names the command and keeps the kernel's extended ack message, which says which attribute
// was wrong (for example "missing remote port").
func commandError(cmd uint8, err error) error {
	var oe *netlink.OpError
	if errors.As(err, &oe) && oe.Message != "" {
		return fmt.Errorf("mptcp: %s: %s: %w", cmdNames[cmd], oe.Message, oe.Err)
	}
	return fmt.Errorf("mptcp: %s: %w", cmdNames[cmd], err)
}

// Endpoints lists the in-kernel path manager's endpoints.
func (c *Client) Endpoints() ([]Endpoint, error) {
	msgs, err := c.exec(cmdGetAddr, nil, netlink.Dump)
	if err != nil {
		return nil, err
	}
	out := make([]Endpoint, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEndpointMsg(m.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Endpoint reads one endpoint by ID.
func (c *Client) Endpoint(id uint8) (Endpoint, error) {
	body, err := endpointBody(Endpoint{ID: id})
	if err != nil {
		return Endpoint{}, err
	}
	msgs, err := c.exec(cmdGetAddr, body, 0)
	if err != nil {
		return Endpoint{}, err
	}
	if len(msgs) != 1 {
		return Endpoint{}, fmt.Errorf("mptcp: GET_ADDR %d: %d replies", id, len(msgs))
	}
	return decodeEndpointMsg(msgs[0].Data)
}

// AddEndpoint adds an endpoint. With e.ID 0 the kernel picks the ID; read it back with Endpoints.
func (c *Client) AddEndpoint(e Endpoint) error {
	if !e.Addr.IsValid() {
		return errors.New("mptcp: ADD_ADDR: no address")
	}
	body, err := endpointBody(e)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdAddAddr, body, netlink.Acknowledge)
	return err
}

// DeleteEndpoint removes the endpoint with this ID.
func (c *Client) DeleteEndpoint(id uint8) error {
	if id == 0 {
		return errors.New("mptcp: DEL_ADDR: endpoint ID 0 is the initial subflow's and cannot be deleted here")
	}
	body, err := endpointBody(Endpoint{ID: id})
	if err != nil {
		return err
	}
	_, err = c.exec(cmdDelAddr, body, netlink.Acknowledge)
	return err
}

// SetEndpointFlags changes the backup and fullmesh flags of the endpoint with e.ID (or e.Addr when the ID is
// 0). The kernel changes no other flag this way: the subflow flag needs a delete and an add.
func (c *Client) SetEndpointFlags(e Endpoint) error {
	body, err := endpointBody(e)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdSetFlags, body, netlink.Acknowledge)
	return err
}

// Limits reads the in-kernel path manager's limits.
func (c *Client) Limits() (Limits, error) {
	msgs, err := c.exec(cmdGetLimits, nil, 0)
	if err != nil {
		return Limits{}, err
	}
	if len(msgs) != 1 {
		return Limits{}, fmt.Errorf("mptcp: GET_LIMITS: %d replies", len(msgs))
	}
	return decodeLimitsMsg(msgs[0].Data)
}

// SetLimits sets both limits.
func (c *Client) SetLimits(l Limits) error {
	body, err := limitsBody(l)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdSetLimits, body, netlink.Acknowledge)
	return err
}

// SubflowCreate asks the userspace path manager to open a subflow of connection token from local (address,
// optional ID and interface) to remote.
func (c *Client) SubflowCreate(token uint32, local Endpoint, remote netip.AddrPort) error {
	body, err := subflowBody(token, local, remote, false)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdSubflowCreate, body, netlink.Acknowledge)
	return err
}

// SubflowDestroy closes the subflow of connection token with this four-tuple.
func (c *Client) SubflowDestroy(token uint32, local, remote netip.AddrPort) error {
	body, err := subflowBody(token, Endpoint{Addr: local.Addr(), Port: local.Port()}, remote, true)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdSubflowDestroy, body, netlink.Acknowledge)
	return err
}

// SubflowSetBackup sets or clears the backup flag of the subflow of connection token with this four-tuple (the
// userspace path manager's SET_FLAGS). The kernel sends MP_PRIO on that subflow, and the peer's scheduler then
// sends on it only while no non-backup subflow is available. The peer reports the change with a SUB_PRIORITY
// event; the local side emits none.
func (c *Client) SubflowSetBackup(token uint32, local, remote netip.AddrPort, backup bool) error {
	body, err := subflowBackupBody(token, local, remote, backup)
	if err != nil {
		return err
	}
	_, err = c.exec(cmdSetFlags, body, netlink.Acknowledge)
	return err
}

// Events is a subscription to the mptcp_pm_events multicast group.
type Events struct {
	c       *genetlink.Conn
	pending []Event
}

// Subscribe opens a separate socket joined to the events group in the namespace netns (0: the calling
// thread's). Joining needs CAP_NET_ADMIN.
func Subscribe(netns int) (*Events, error) {
	c, fam, err := dialFamily(netns)
	if err != nil {
		return nil, err
	}
	for _, g := range fam.Groups {
		if g.Name == EventGroup {
			if err := c.JoinGroup(g.ID); err != nil {
				c.Close()
				return nil, fmt.Errorf("mptcp: join %s: %w", EventGroup, err)
			}
			// Bursts of connections must not overflow the socket and lose events silently.
			_ = c.SetReadBuffer(1 << 20)
			return &Events{c: c}, nil
		}
	}
	c.Close()
	return nil, fmt.Errorf("mptcp: family %s has no %s group", FamilyName, EventGroup)
}

// Next returns the next event. It blocks until one arrives, the deadline passes, or Close is called.
func (s *Events) Next() (Event, error) {
	for len(s.pending) == 0 {
		msgs, _, err := s.c.Receive()
		if err != nil {
			return Event{}, fmt.Errorf("mptcp: events: %w", err)
		}
		for _, m := range msgs {
			ev, err := DecodeEvent(m.Header.Command, m.Data)
			if err != nil {
				return Event{}, err
			}
			s.pending = append(s.pending, ev)
		}
	}
	ev := s.pending[0]
	s.pending = s.pending[1:]
	return ev, nil
}

// SetDeadline bounds Next.
func (s *Events) SetDeadline(t time.Time) error { return s.c.SetReadDeadline(t) }

// Close ends the subscription and unblocks Next.
func (s *Events) Close() error { return s.c.Close() }

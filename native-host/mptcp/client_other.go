//go:build !linux

package mptcp

import (
	"net/netip"
	"time"
)

// Client is unavailable outside Linux; Dial always fails with ErrUnsupported.
type Client struct{}

func Dial(netns int) (*Client, error)                                         { return nil, ErrUnsupported }
func (c *Client) Close() error                                                { return ErrUnsupported }
func (c *Client) SetDeadline(time.Time) error                                 { return ErrUnsupported }
func (c *Client) Endpoints() ([]Endpoint, error)                              { return nil, ErrUnsupported }
func (c *Client) Endpoint(uint8) (Endpoint, error)                            { return Endpoint{}, ErrUnsupported }
func (c *Client) AddEndpoint(Endpoint) error                                  { return ErrUnsupported }
func (c *Client) DeleteEndpoint(uint8) error                                  { return ErrUnsupported }
func (c *Client) SetEndpointFlags(Endpoint) error                             { return ErrUnsupported }
func (c *Client) Limits() (Limits, error)                                     { return Limits{}, ErrUnsupported }
func (c *Client) SetLimits(Limits) error                                      { return ErrUnsupported }
func (c *Client) SubflowCreate(uint32, Endpoint, netip.AddrPort) error        { return ErrUnsupported }
func (c *Client) SubflowDestroy(uint32, netip.AddrPort, netip.AddrPort) error { return ErrUnsupported }
func (c *Client) SubflowSetBackup(uint32, netip.AddrPort, netip.AddrPort, bool) error {
	return ErrUnsupported
}

// Events is unavailable outside Linux.
type Events struct{}

func Subscribe(netns int) (*Events, error)    { return nil, ErrUnsupported }
func (s *Events) Next() (Event, error)        { return Event{}, ErrUnsupported }
func (s *Events) SetDeadline(time.Time) error { return ErrUnsupported }
func (s *Events) Close() error                { return ErrUnsupported }

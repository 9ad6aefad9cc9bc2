package paths

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"time"
)

// The rate probe: when a path has no rate estimate (nothing busy enough passed over it yet, nothing kept from an
// earlier host), one HTTPS GET of a small object from its source address measures it, so that the first large
// page is decided from numbers rather than priors. It is bounded (RateProbeBytes read at most, RateProbeTimeout),
// rate-limited (at most once per RateProbeEvery per path, and the estimate is kept across hosts), waits until
// every path has been quiet for RateProbeQuiet (never beside a page load) and, on a cellular path, runs only while the
// radio is already awake (a probe must not pay a promotion and a tail).
const (
	RateProbeBytes   = 64 << 10
	RateProbeEvery   = 10 * time.Minute
	RateProbeTimeout = 5 * time.Second
	RateProbeQuiet   = 2 * time.Second
)

// RateProbe is one probe's outcome: the TCP connect time (one RTT), the body's bytes and how long they took from
// the first to the last, and the rate they imply (Bound: only a lower bound, the link was faster than a transfer
// this short can tell).
type RateProbe struct {
	RTT   time.Duration
	Bytes int64
	Span  time.Duration
	BPS   float64
	Bound bool
}

// ProbeRate fetches the first RateProbeBytes of target (an https URL, by a Range request) from src and estimates
// the path's downlink rate. pins, when given, are
// base64 SHA-256 hashes of the server's SubjectPublicKeyInfo, one of which its certificate must have (a testbed's
// self-signed origin); without pins the system roots verify it.
func ProbeRate(ctx context.Context, src netip.Addr, target string, pins []string, timeout time.Duration) (RateProbe, error) {
	var r RateProbe
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return r, fmt.Errorf("paths: rate probe URL %q: must be https://host/path", target)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
	network := "tcp4"
	if src.Is6() {
		network = "tcp6"
	}
	tlsConf := &tls.Config{}
	if len(pins) > 0 {
		// The pins replace the chain check, as Chromium's --ignore-certificate-errors-spki-list does.
		tlsConf.InsecureSkipVerify = true
		tlsConf.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			for _, c := range raw {
				cert, err := x509.ParseCertificate(c)
				if err != nil {
					continue
				}
				h := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
				if slices.Contains(pins, base64.StdEncoding.EncodeToString(h[:])) {
					return nil
				}
			}
			return errors.New("paths: rate probe: no pinned key in the server's certificates")
		}
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			t0 := time.Now()
			c, err := d.DialContext(ctx, network, addr)
			r.RTT = time.Since(t0)
			return c, err
		},
		TLSClientConfig:   tlsConf,
		DisableKeepAlives: true,
		ForceAttemptHTTP2: false,
	}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return r, err
	}
	// Only the first RateProbeBytes of the object, from any server that serves ranges (a large file on a CDN).
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", RateProbeBytes-1))
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return r, fmt.Errorf("paths: rate probe %s from %s: %w", target, src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent {
		return r, fmt.Errorf("paths: rate probe %s: %s", target, resp.Status)
	}
	buf := make([]byte, 16<<10)
	var first, last time.Time
	var firstN int64
	for r.Bytes < RateProbeBytes {
		n, err := resp.Body.Read(buf[:min(len(buf), int(RateProbeBytes-r.Bytes))])
		if n > 0 {
			now := time.Now()
			if first.IsZero() {
				first, firstN = now, int64(n)
			}
			last = now
			r.Bytes += int64(n)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return r, fmt.Errorf("paths: rate probe %s: %w", target, err)
		}
	}
	r.Span = last.Sub(first)
	r.BPS, r.Bound = EstimateRate(r.RTT, r.Span, r.Bytes-firstN, r.Bytes)
	return r, nil
}

// IW10 is a new TCP connection's initial window in bytes (RFC 6928: 10 segments of 1448 bytes of payload).
const iw10 = 10 * 1448

// EstimateRate is the downlink rate that makes a new connection's slow start deliver the probe as measured: the
// server sends IW10, then twice as much each round trip, each round arriving at the link rate, until a round's
// window fills the bandwidth-delay product and the data arrives back to back. span is the time from the first
// read (whose total-after bytes came in with it) to the last. The rate is found by bisection. When the span is
// within what the round trips alone take (a fast link and a short transfer), no finite rate is needed to explain
// it: the estimate is then only the slowest rate consistent with it, a lower bound.
func EstimateRate(rtt, span time.Duration, after, total int64) (bps float64, bound bool) {
	if after <= 0 || total <= 0 || rtt <= 0 {
		return 0, true
	}
	elapsed := func(r float64) float64 { return slowStartSpan(rtt.Seconds(), r, total-after, total) }
	s := span.Seconds()
	fastest := elapsed(1e12)
	// Within 10 % (or 2 ms of timer and scheduling) of what slow start's round trips take at any rate.
	if s <= fastest*1.1+0.002 {
		// The slowest rate still that fast is the bound.
		lo, hi := 1e3, 1e12
		for range 80 {
			mid := math.Sqrt(lo * hi)
			if elapsed(mid) > fastest*1.1+0.002 {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi * 8, true
	}
	lo, hi := 1e3, 1e12
	for range 80 {
		mid := math.Sqrt(lo * hi)
		if elapsed(mid) > s {
			lo = mid
		} else {
			hi = mid
		}
	}
	return math.Sqrt(lo*hi) * 8, false
}

// slowStartSpan is the time from the first read (first bytes) to the last byte of total bytes over a new
// connection on a link of rate r (bytes/s) and round trip rtt (s).
func slowStartSpan(rtt, r float64, first, total int64) float64 {
	var t, got float64
	w := float64(iw10)
	for {
		chunk := min(w, float64(total)-got)
		end := t + chunk/r
		got += chunk
		if got >= float64(total) {
			return end - float64(first)/r
		}
		if w/r < rtt {
			t += rtt // the next round follows the first ACK of this one
		} else {
			t = end // the window fills the pipe: back to back
		}
		w *= 2
	}
}

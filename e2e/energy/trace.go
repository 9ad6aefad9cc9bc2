package energy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/mpsurf/mpsurf/native-host/radio"
)

// TraceHeader is the optional first line of a packet timeline file.
const TraceHeader = "t_unix_ns,dir,bytes"

// MaxPacketBytes bounds one record's size: the link emulator reads whole packets off a TUN device, and
// offloaded segments stay below 64 KiB; anything larger is a corrupt line.
const MaxPacketBytes = 1 << 16

// maxLine bounds one line so that garbage without newlines cannot grow memory.
const maxLine = 256

// ParseTrace reads a per-interface packet timeline as the link emulator writes it: lines
// "t_unix_ns,dir,bytes" with dir "d" (downlink, to the device) or "u" (uplink), an optional header line
// equal to TraceHeader first, and blank lines ignored. The packets come back sorted by time (stable), since
// the two directions may be logged by different writers.
func ParseTrace(r io.Reader) ([]radio.Packet, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, maxLine), maxLine)
	var out []radio.Packet
	line := 0
	seen := false
	for sc.Scan() {
		line++
		s := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(s) == "" {
			continue
		}
		if !seen {
			seen = true
			if s == TraceHeader {
				continue
			}
		}
		p, err := parseRecord(s)
		if err != nil {
			return nil, fmt.Errorf("timeline line %d: %w", line, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("timeline line %d: longer than %d bytes", line+1, maxLine)
		}
		return nil, fmt.Errorf("timeline: %w", err)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].T < out[j].T })
	return out, nil
}

func parseRecord(s string) (radio.Packet, error) {
	f := strings.Split(s, ",")
	if len(f) != 3 {
		return radio.Packet{}, fmt.Errorf("%q: want 3 comma-separated fields t_unix_ns,dir,bytes", s)
	}
	t, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || t <= 0 {
		return radio.Packet{}, fmt.Errorf("t_unix_ns %q: want a positive integer", f[0])
	}
	var up bool
	switch f[1] {
	case "u":
		up = true
	case "d":
	default:
		return radio.Packet{}, fmt.Errorf("dir %q: want \"d\" or \"u\"", f[1])
	}
	n, err := strconv.Atoi(f[2])
	if err != nil || n <= 0 || n > MaxPacketBytes {
		return radio.Packet{}, fmt.Errorf("bytes %q: want an integer in 1..%d", f[2], MaxPacketBytes)
	}
	return radio.Packet{T: t, Up: up, Bytes: n}, nil
}

// ReadTraceFile parses one timeline file. A missing file is reported with an error wrapping os.ErrNotExist.
func ReadTraceFile(path string) ([]radio.Packet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// WriteTrace writes packets in the format ParseTrace reads, header first.
func WriteTrace(w io.Writer, pkts []radio.Packet) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintln(bw, TraceHeader)
	for _, p := range pkts {
		d := "d"
		if p.Up {
			d = "u"
		}
		fmt.Fprintf(bw, "%d,%s,%d\n", p.T, d, p.Bytes)
	}
	return bw.Flush()
}

// Package origin is the testbed's web server: the corpus over HTTPS (HTTP/2 and
// HTTP/1.1 on one port, HTTP/1.1 only on another, optionally plain HTTP), on MPTCP
// listeners, with a JSONL log of every request and connection.
package origin

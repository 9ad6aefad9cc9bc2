// Package protocol is the Go side of PROTOCOL.md: the envelopes, the error codes, the request bodies and their
// validation, origin normalisation, and the Policy and Decision types the host sends.
//
// Parsing is strict: a payload must be valid UTF-8 and exactly one JSON object, integers must be written as JSON
// integers, and every problem is reported as an *Error carrying the code of PROTOCOL.md §6 and a message that names
// the field. Unknown keys are ignored so that a newer extension can add fields without breaking an older host.
// Nothing here does I/O; everything is safe for concurrent use.
package protocol

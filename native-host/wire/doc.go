// Package wire reads and writes Chrome native messaging frames: a 4-byte length in native byte order followed by
// that many bytes of UTF-8 JSON (PROTOCOL.md §1).
//
// A Reader never allocates more than its cap, however large a length it is told, so a hostile or corrupt length costs
// nothing but an ErrTooLarge. A Reader is not safe for concurrent use; a Writer is, and it writes each frame with one
// Write call so that frames from different goroutines never interleave.
package wire

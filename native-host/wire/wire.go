package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

const (
	// HeaderSize is the length prefix of every frame.
	HeaderSize = 4
	// MaxIn is the host's cap on a browser -> host frame (PROTOCOL.md §1).
	MaxIn = 64 << 10
	// MaxOut is Chrome's cap on a host -> browser frame; Chrome closes the port on a larger one.
	MaxOut = 1 << 20
)

var (
	// ErrEmpty is a frame whose length is 0. The stream is still in sync, so reading can go on.
	ErrEmpty = errors.New("zero-length frame")
	// ErrTooLarge is a length above the cap. Its payload was not read, so the stream cannot be resynchronised.
	ErrTooLarge = errors.New("frame too large")
	// ErrTruncated is an EOF inside a length or a payload.
	ErrTruncated = errors.New("truncated frame")
)

// Reader reads frames of at most a fixed size.
type Reader struct {
	r   io.Reader
	max int
	hdr [HeaderSize]byte
}

// NewReader returns a Reader that refuses frames longer than max bytes (max >= 1).
func NewReader(r io.Reader, max int) *Reader {
	if max < 1 {
		panic("wire: NewReader max < 1")
	}
	return &Reader{r: r, max: max}
}

// Read returns the next frame's payload in a freshly allocated slice. It returns io.EOF when the stream ends between
// frames, an error wrapping ErrTruncated when it ends inside one, ErrEmpty for a zero length and an error wrapping
// ErrTooLarge for a length above the cap. Any other error is the underlying reader's.
func (r *Reader) Read() ([]byte, error) {
	if _, err := io.ReadFull(r.r, r.hdr[:]); err != nil {
		switch err {
		case io.EOF:
			return nil, io.EOF
		case io.ErrUnexpectedEOF:
			return nil, fmt.Errorf("%w: EOF inside the length", ErrTruncated)
		}
		return nil, err
	}
	n := uint64(binary.NativeEndian.Uint32(r.hdr[:]))
	if n == 0 {
		return nil, ErrEmpty
	}
	// Compare before allocating: this is what keeps a 0xFFFFFFFF length harmless.
	if n > uint64(r.max) {
		return nil, fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, n, r.max)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r.r, p); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: EOF inside a %d-byte payload", ErrTruncated, n)
		}
		return nil, err
	}
	return p, nil
}

// Append appends the frame of payload to dst. It does not check a cap.
func Append(dst, payload []byte) []byte {
	dst = binary.NativeEndian.AppendUint32(dst, uint32(len(payload)))
	return append(dst, payload...)
}

// Writer writes frames of at most a fixed size. It is safe for concurrent use.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	max int
	buf []byte
}

// NewWriter returns a Writer that refuses payloads longer than max bytes.
func NewWriter(w io.Writer, max int) *Writer {
	return &Writer{w: w, max: max}
}

// Write writes one frame. A payload above the cap is refused with an error wrapping ErrTooLarge and nothing is
// written; an empty payload is refused with ErrEmpty.
func (w *Writer) Write(payload []byte) error {
	if len(payload) == 0 {
		return ErrEmpty
	}
	if len(payload) > w.max {
		return fmt.Errorf("%w: %d bytes, cap %d", ErrTooLarge, len(payload), w.max)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// One Write per frame: a frame is never split between two writes that another goroutine could come between,
	// and a short write cannot go unnoticed.
	w.buf = Append(w.buf[:0], payload)
	n, err := w.w.Write(w.buf)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil // do not keep a large reply's buffer for the life of the process
	}
	return err
}

package corpus

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"strings"
	"sync"
)

// Text bodies: a small valid prefix, a comment holding the padding, a suffix.
func textFrame(k Kind, index int) (prefix, suffix string) {
	switch k {
	case KindJS:
		return "window.mpsurfObjects = (window.mpsurfObjects || 0) + 1;\n/* ", " */\n"
	case KindCSS:
		return fmt.Sprintf(".mpsurf-o%d { margin: 0 }\n/* ", index), " */\n"
	}
	return fmt.Sprintf("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>o%d</title></head><body><!--", index),
		"--></body></html>\n"
}

// imageMin keeps every image above the PNG base plus one padding chunk.
const imageMin = 128

// jpegSegmentMin is the smallest JPEG comment segment: marker and length, no payload.
const jpegSegmentMin = 4

func minSize(o Object) int {
	if o.Kind == KindImage {
		return imageMin
	}
	pre, suf := textFrame(o.Kind, 999999)
	return len(pre) + len(suf) + 16
}

func objectBody(seed uint64, p *Page, o *Object) []byte {
	r := newRNG(seed, p.Name, o.Path)
	if o.Kind == KindImage {
		if strings.HasSuffix(o.Path, ".jpg") {
			return jpegBody(r, o.Size)
		}
		return pngBody(r, o.Size)
	}
	pre, suf := textFrame(o.Kind, o.Index)
	b := make([]byte, o.Size)
	n := copy(b, pre)
	r.text(b[n : len(b)-len(suf)])
	copy(b[len(b)-len(suf):], suf)
	return b
}

// The images are fixed tiny pictures; a seed changes only their padding, so their base
// sizes are constants and the layout can pick a format without encoding anything.
var (
	baseOnce          sync.Once
	basePNG, baseJPEG []byte
)

func bases() {
	baseOnce.Do(func() {
		img := image.NewNRGBA(image.Rect(0, 0, 8, 8))
		for y := range 8 {
			for x := range 8 {
				img.Set(x, y, color.NRGBA{uint8(32 * x), uint8(32 * y), 160, 255})
			}
		}
		var b bytes.Buffer
		if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
			panic(err)
		}
		baseJPEG = b.Bytes()
		var p bytes.Buffer
		if err := png.Encode(&p, img.SubImage(image.Rect(0, 0, 1, 1))); err != nil {
			panic(err)
		}
		basePNG = p.Bytes()
	})
}

func jpegBase() int { bases(); return len(baseJPEG) }

// pngBody inserts one private ancillary chunk ("mpSf": ancillary, private, reserved bit
// clear, safe to copy) before IEND; decoders skip it.
func pngBody(r *rng, size int) []byte {
	bases()
	iend := len(basePNG) - 12
	data := size - len(basePNG) - 12
	if data < 0 {
		panic(fmt.Sprintf("corpus: png of %d bytes is below the minimum", size))
	}
	b := make([]byte, 0, size)
	b = append(b, basePNG[:iend]...)
	b = binary.BigEndian.AppendUint32(b, uint32(data))
	start := len(b)
	b = append(b, "mpSf"...)
	b = b[:len(b)+data]
	r.bytes(b[start+4:])
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
	return append(b, basePNG[iend:]...)
}

// jpegBody inserts comment (COM, 0xFFFE) segments right after SOI; a segment holds at
// most 65533 payload bytes, so the padding is spread evenly over as many as needed.
func jpegBody(r *rng, size int) []byte {
	bases()
	pad := size - len(baseJPEG)
	if pad < jpegSegmentMin && pad != 0 {
		panic(fmt.Sprintf("corpus: jpeg of %d bytes cannot be padded", size))
	}
	const maxSeg = 4 + 65533
	nseg := (pad + maxSeg - 1) / maxSeg
	b := make([]byte, 0, size)
	b = append(b, baseJPEG[:2]...)
	for i := range nseg {
		seg := pad / nseg
		if i < pad%nseg {
			seg++
		}
		b = append(b, 0xFF, 0xFE)
		b = binary.BigEndian.AppendUint16(b, uint16(seg-2))
		n := len(b)
		b = b[:n+seg-4]
		r.bytes(b[n:])
	}
	return append(b, baseJPEG[2:]...)
}

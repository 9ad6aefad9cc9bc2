package mph2

import (
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/dunglas/httpsfv"
)

// expectedDigest is a digest the server gave for the whole representation.
type expectedDigest struct {
	alg  string // sha-512, sha-256 or md5
	want []byte
	from string // the header it came from
}

// digestOf picks the strongest digest of the whole representation in h: Repr-Digest (RFC 9530, a Structured
// Field Dictionary of byte sequences), Digest (RFC 3230, "ALG=BASE64" pairs) and, only when the response carried
// the whole body (wholeBody), Content-MD5 (RFC 1864), which describes the body it came with. Content-Digest is
// not used: on a 206 it describes the part. Unknown algorithms are skipped; a malformed header is an error.
func digestOf(h http.Header, wholeBody bool) (*expectedDigest, error) {
	var found []expectedDigest
	if vs := h.Values("Repr-Digest"); len(vs) > 0 {
		d, err := httpsfv.UnmarshalDictionary(vs)
		if err != nil {
			return nil, fmt.Errorf("Repr-Digest: %w", err)
		}
		for _, k := range d.Names() {
			m, _ := d.Get(k)
			it, ok := m.(httpsfv.Item)
			b, isBytes := it.Value.([]byte)
			if !ok || !isBytes {
				return nil, fmt.Errorf("Repr-Digest: %s is not a byte sequence", k)
			}
			found = append(found, expectedDigest{k, b, "Repr-Digest"})
		}
	}
	for _, v := range h.Values("Digest") {
		for _, part := range strings.Split(v, ",") {
			alg, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				return nil, fmt.Errorf("Digest: %q is not ALG=VALUE", part)
			}
			b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(val))
			if err != nil {
				return nil, fmt.Errorf("Digest %s: %w", alg, err)
			}
			found = append(found, expectedDigest{strings.ToLower(alg), b, "Digest"})
		}
	}
	if v := h.Get("Content-MD5"); v != "" && wholeBody {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("Content-MD5: %w", err)
		}
		found = append(found, expectedDigest{"md5", b, "Content-MD5"})
	}
	for _, alg := range []string{"sha-512", "sha-256", "md5"} {
		for _, d := range found {
			if d.alg == alg && len(d.want) == newHash(alg).Size() {
				return &d, nil
			}
		}
	}
	return nil, nil
}

func newHash(alg string) hash.Hash {
	switch alg {
	case "sha-512":
		return sha512.New()
	case "sha-256":
		return sha256.New()
	}
	return md5.New()
}

// check hashes the file and compares.
// check reads the first size bytes of f, the open partial file (never its name again: the name may have been
// replaced meanwhile in a folder others can write to), against the digest.
func (d *expectedDigest) check(f *os.File, size int64) error {
	h := newHash(d.alg)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, size)); err != nil {
		return err
	}
	if got := h.Sum(nil); string(got) != string(d.want) {
		return fmt.Errorf("%s %s: the file's digest is %s, the server's %s", d.from, d.alg,
			base64.StdEncoding.EncodeToString(got), base64.StdEncoding.EncodeToString(d.want))
	}
	return nil
}

func (d *expectedDigest) String() string {
	if d == nil {
		return ""
	}
	return d.from + " " + d.alg
}

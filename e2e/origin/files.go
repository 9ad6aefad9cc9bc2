package origin

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/mpsurf/mpsurf/native-host/cli"
)

// DownloadPrefix is where the large files live: /dl/1m.bin, /dl/8m.bin, /dl/32m.bin. They are served with
// net/http's ServeContent (single and multiple ranges, If-Range, If-None-Match), a strong ETag, a fixed
// Last-Modified, Repr-Digest (RFC 9530) and Content-Disposition: attachment, so a browser saves rather than
// shows them. Their bytes are pseudo-random (incompressible) from a fixed seed, the same on every start.
const DownloadPrefix = "/dl/"

// DownloadFile is one large file.
type DownloadFile struct {
	Name   string `json:"name"`
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"` // hex
}

// downloadSizes are the files' sizes: seed 003 §5.3 measured 0.5-4 MB objects and 5-20 MB files; 1, 8 and 32 MB
// cover one below the seeds' MPTCP break-even on the testbed's links, one typical and one long transfer.
var downloadSizes = []struct {
	name string
	size int
}{{"1m.bin", 1 << 20}, {"8m.bin", 8 << 20}, {"32m.bin", 32 << 20}}

// downloadModTime is every file's Last-Modified.
var downloadModTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type download struct {
	body []byte
	etag string
	repr string
	info DownloadFile
}

var (
	downloadsOnce sync.Once
	downloads     map[string]*download
)

// downloadFiles makes the files once (46 MB in all, on first use).
func downloadFiles() map[string]*download {
	downloadsOnce.Do(func() {
		downloads = map[string]*download{}
		for i, f := range downloadSizes {
			body := make([]byte, f.size)
			r := rand.New(rand.NewPCG(uint64(i+1), 0x6d70683264))
			for j := 0; j+8 <= len(body); j += 8 {
				v := r.Uint64()
				for k := 0; k < 8; k++ {
					body[j+k] = byte(v >> (8 * k))
				}
			}
			sum := sha256.Sum256(body)
			downloads[f.name] = &download{
				body: body,
				etag: `"` + hex.EncodeToString(sum[:8]) + `"`,
				repr: "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":",
				info: DownloadFile{Name: f.name, Path: DownloadPrefix + f.name, Bytes: int64(f.size), SHA256: hex.EncodeToString(sum[:])},
			}
		}
	})
	return downloads
}

// DownloadFiles lists the large files in size order.
func DownloadFiles() []DownloadFile {
	all := downloadFiles()
	out := make([]DownloadFile, 0, len(downloadSizes))
	for _, f := range downloadSizes {
		out = append(out, all[f.name].info)
	}
	return out
}

func serveDownload(w http.ResponseWriter, r *http.Request, name string) {
	d := downloadFiles()[name]
	if d == nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("ETag", d.etag)
	h.Set("Repr-Digest", d.repr)
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	http.ServeContent(w, r, name, downloadModTime, bytes.NewReader(d.body))
}

func filesMain(args []string, stdout, stderr io.Writer) int {
	fs := cli.Flags("origin files")
	asJSON := fs.Bool("json", false, "as JSON")
	if err := cli.ParseNone(fs, args); err != nil {
		return cli.Exit(err, fs.Name(), cli.Described(fs, "usage: origin files [--json]\n"), stdout, stderr)
	}
	files := DownloadFiles()
	if *asJSON {
		json.NewEncoder(stdout).Encode(files)
		return 0
	}
	for _, f := range files {
		fmt.Fprintf(stdout, "%-8s %10d bytes  %s  sha256 %s\n", f.Name, f.Bytes, f.Path, f.SHA256)
	}
	return 0
}

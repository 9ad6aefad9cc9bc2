package protocol

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
)

// Download states (PROTOCOL.md §4 Downloads).
const (
	DownloadDeclined = "declined" // the model (or a rule) chose single path: the browser's own download goes on
	DownloadStarting = "starting" // asking the server; the browser's download goes on until "running"
	DownloadRunning  = "running"  // the first response checked out: the browser may cancel its own download
	DownloadPaused   = "paused"
	DownloadDone     = "done"
	DownloadFailed   = "failed"
	DownloadCanceled = "canceled"
)

// Limits of a download offer.
const (
	MaxDownloadID   = 64
	MaxDownloadURL  = 8192
	MaxDownloadPath = 4096
	maxCookieHeader = 16384
	maxHeaderValue  = 8192
)

// DownloadPath is one path's share of a download.
type DownloadPath struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

// DownloadState is the body of download replies and pushes.
type DownloadState struct {
	ID        string         `json:"id"`
	State     string         `json:"state"`
	URL       string         `json:"url"`
	File      string         `json:"file"`
	Size      int64          `json:"size"`
	Received  int64          `json:"received"`
	Paths     []DownloadPath `json:"paths"`
	Multipath bool           `json:"multipath"`
	Reason    string         `json:"reason"`
	Digest    string         `json:"digest,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
}

// DownloadList is the body of a download_list reply.
type DownloadList struct {
	Downloads []DownloadState `json:"downloads"`
}

// DownloadOffer is a parsed download_offer body. Header holds the request's cookies and authorization: they
// live in memory for that one download only, never logged, never written.
type DownloadOffer struct {
	ID, URL, Origin, File, Proto string
	Size                         int64
	Header                       http.Header
	Resume                       bool
}

// DownloadControl is a parsed download_control body: an action on the download ID, or, to discard, on the
// partial file File a stopped host left.
type DownloadControl struct {
	Action string // pause, resume, cancel, discard
	ID     string
	File   string
}

// ParseDownloadOffer checks a download_offer body (PROTOCOL.md §4 Downloads). isDir says whether a directory
// exists: the file's must.
func ParseDownloadOffer(body json.RawMessage, isDir func(string) bool) (DownloadOffer, *Error) {
	var o DownloadOffer
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return o, perr
	}
	if o.ID, perr = obj.String("id", MaxDownloadID); perr != nil {
		return o, perr
	}
	if o.ID == "" {
		return o, Errorf(CodeBadRequest, "id: empty")
	}
	if o.URL, perr = obj.String("url", MaxDownloadURL); perr != nil {
		return o, perr
	}
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return o, Errorf(CodeBadRequest, "url: not an https URL without credentials")
	}
	u.Fragment = ""
	o.URL = u.String()
	raw, perr := obj.String("origin", -1)
	if perr != nil {
		return o, perr
	}
	if o.Origin, err = NormalizeOrigin(raw); err != nil {
		return o, Errorf(CodeBadOrigin, "origin: %v", err)
	}
	if want, _ := NormalizeOrigin(u.Scheme + "://" + u.Host); want != o.Origin {
		return o, Errorf(CodeBadRequest, "origin: %s is not the URL's origin", o.Origin)
	}
	if o.Size, perr = obj.Int("size", 1, 1<<50); perr != nil {
		return o, perr
	}
	if o.File, perr = downloadFile(obj, isDir); perr != nil {
		return o, perr
	}
	if obj.Has("protocol") {
		if o.Proto, perr = obj.OneOf("protocol", "h2", "http/1.1", ""); perr != nil {
			return o, perr
		}
	}
	if obj.Has("resume") {
		if o.Resume, perr = obj.Bool("resume"); perr != nil {
			return o, perr
		}
	}
	o.Header = http.Header{}
	if obj.Has("headers") {
		hs, perr := AsObject(obj["headers"], "headers")
		if perr != nil {
			return o, perr
		}
		limits := map[string]int{"cookie": maxCookieHeader, "authorization": maxHeaderValue, "referer": maxHeaderValue, "user-agent": 512}
		for name := range hs {
			lim, ok := limits[name]
			if !ok {
				return o, Errorf(CodeBadRequest, "headers.%.40s: not one of cookie, authorization, referer, user-agent", name)
			}
			v, perr := hs.String(name, lim)
			if perr != nil {
				return o, Errorf(CodeBadRequest, "headers.%s", perr.Message)
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return o, Errorf(CodeBadRequest, "headers.%s: control characters", name)
			}
			if v != "" {
				o.Header.Set(name, v)
			}
		}
	}
	return o, nil
}

// ParseDownloadControl checks a download_control body: an action, with the download's id, or the partial file's
// path to discard. isDir is as for ParseDownloadOffer.
func ParseDownloadControl(body json.RawMessage, isDir func(string) bool) (DownloadControl, *Error) {
	obj, perr := AsObject(body, "body")
	if perr != nil {
		return DownloadControl{}, perr
	}
	c := DownloadControl{}
	if c.Action, perr = obj.OneOf("action", "pause", "resume", "cancel", "discard"); perr != nil {
		return c, perr
	}
	if c.Action == "discard" {
		c.File, perr = downloadFile(obj, isDir)
		return c, perr
	}
	c.ID, perr = obj.String("id", MaxDownloadID)
	return c, perr
}

// downloadFile reads the "file" field: an absolute path whose directory exists.
func downloadFile(obj Object, isDir func(string) bool) (string, *Error) {
	f, perr := obj.String("file", MaxDownloadPath)
	if perr != nil {
		return "", perr
	}
	if !filepath.IsAbs(f) || filepath.Clean(f) != f || strings.ContainsRune(f, 0) {
		return "", Errorf(CodeBadRequest, "file: not a clean absolute path")
	}
	if !isDir(filepath.Dir(f)) {
		return "", Errorf(CodeBadRequest, "file: its directory does not exist")
	}
	return f, nil
}

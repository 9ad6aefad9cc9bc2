package protocol

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Body limits of PROTOCOL.md §4. Client and version are counted in bytes, nav in characters (code points): the
// extension counts nav in UTF-16 units, of which there are never fewer, so every nav it sends fits.
const (
	MaxClientLen  = 64
	MaxVersionLen = 32
	MaxNavLen     = 128
)

// Parse reads one request payload. On failure the returned Request still carries the id and type when both could be
// read, so that the error reply can echo them; otherwise it is zero and Fail replies with id 0 and type "error".
// The body is checked only for being an object; the per-type parsers below check its fields.
func Parse(payload []byte) (Request, *Error) {
	if !utf8.Valid(payload) {
		return Request{}, Errorf(CodeBadUTF8, "payload is not valid UTF-8")
	}
	m, ok := object(payload)
	if !ok {
		return Request{}, Errorf(CodeBadJSON, "payload is not one JSON object")
	}
	obj := Object(m)
	id, idErr := obj.Int("id", 1, MaxID)
	typ, typeErr := obj.String("type", -1)
	var req Request
	if idErr == nil && typeErr == nil {
		req.ID, req.Type = id, typ
	}
	// The version comes first: a message of another version may lay out id and type differently.
	v, err := obj.Int("v", 0, MaxSafeInt)
	if err != nil {
		return req, err
	}
	if v != Version {
		return req, Errorf(CodeUnsupportedVersion, "v: %d is not supported, only %d", v, Version)
	}
	if idErr != nil {
		return req, idErr
	}
	if typeErr != nil {
		return req, typeErr
	}
	if raw, ok := obj["body"]; ok {
		if !isObject(raw) {
			return req, Errorf(CodeBadRequest, "body: must be an object")
		}
		req.Body = raw
	}
	return req, nil
}

// Hello is a hello request's body.
type Hello struct {
	Client    string
	Version   string
	Protocols []int64
}

// ParseHello checks a hello body. A client that does not list protocol 1 gets unsupported_version.
func ParseHello(body json.RawMessage) (Hello, *Error) {
	obj, err := AsObject(body, "body")
	if err != nil {
		return Hello{}, err
	}
	var h Hello
	if h.Client, err = obj.String("client", MaxClientLen); err != nil {
		return Hello{}, err
	}
	if h.Version, err = obj.String("version", MaxVersionLen); err != nil {
		return Hello{}, err
	}
	items, err := obj.Array("protocols", 64)
	if err != nil {
		return Hello{}, Errorf(CodeBadRequest, "protocols: must be an array of at most 64 integers")
	}
	for _, it := range items {
		n, ok := parseInt(it)
		if !ok {
			return Hello{}, Errorf(CodeBadRequest, "protocols: must be an array of integers")
		}
		h.Protocols = append(h.Protocols, n)
	}
	if !slices.Contains(h.Protocols, Version) {
		return Hello{}, Errorf(CodeUnsupportedVersion, "protocols: the host speaks only protocol %d", Version)
	}
	return h, nil
}

// MaxPathLen bounds a navigation's URL path (decide and report `path`), in bytes.
const MaxPathLen = 2048

// Decide is a decide request's body, with the origin normalised. Path is "" when the request had none (an older
// extension).
type Decide struct {
	Origin string
	Tab    int64
	Nav    string
	Path   string
	// ModelInput asks for the model's whole input in the reply (PROTOCOL.md §4 decide): a caller that replays or
	// inspects the decision; the extension does not, and the decision log keeps the input either way.
	ModelInput bool
}

// ParseDecide checks a decide body: every field's presence and type first (bad_request), then the origin
// (bad_origin).
func ParseDecide(body json.RawMessage) (Decide, *Error) {
	obj, err := AsObject(body, "body")
	if err != nil {
		return Decide{}, err
	}
	var d Decide
	origin, err := obj.String("origin", -1)
	if err != nil {
		return Decide{}, err
	}
	// Chrome's tab ids are 32-bit; the extension checks the echoed tab against the same bound.
	if d.Tab, err = obj.Int("tab", -1, MaxID); err != nil {
		return Decide{}, err
	}
	if d.Nav, err = obj.String("nav", -1); err != nil {
		return Decide{}, err
	}
	if n := utf8.RuneCountInString(d.Nav); n < 1 || n > MaxNavLen {
		return Decide{}, Errorf(CodeBadRequest, "nav: must be 1 to %d characters", MaxNavLen)
	}
	if d.Path, err = PathField(obj); err != nil {
		return Decide{}, err
	}
	if obj.Has("model_input") {
		if d.ModelInput, err = obj.Bool("model_input"); err != nil {
			return Decide{}, err
		}
	}
	norm, oerr := NormalizeOrigin(origin)
	if oerr != nil {
		return Decide{}, Errorf(CodeBadOrigin, "origin: %v", oerr)
	}
	d.Origin = norm
	return d, nil
}

// object decodes data if it is exactly one JSON object (json.Valid refuses trailing values such as a second object).
func object(data []byte) (map[string]json.RawMessage, bool) {
	if !json.Valid(data) || !isObject(data) {
		return nil, false
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, false
	}
	return obj, true
}

func isObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// parseInt accepts a JSON integer literal only: 1.0 and 1e0 are refused, so that a value is read one way by Go and
// JavaScript alike.
func parseInt(raw json.RawMessage) (int64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

// PathField reads the optional `path` of decide and report: a URL path as the browser serialises it, starting with
// "/", without query or fragment (the extension never sends them), at most MaxPathLen bytes.
func PathField(obj Object) (string, *Error) {
	if !obj.Has("path") {
		return "", nil
	}
	p, err := obj.String("path", MaxPathLen)
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "?#") {
		return "", Errorf(CodeBadRequest, "path: must start with / and have no query or fragment")
	}
	return p, nil
}

package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Object is one JSON object's members, read one field at a time with the protocol's rules: an integer is an
// integer literal (1.0 and 1e0 are refused, so that Go and JavaScript read a value alike), a string is a JSON
// string (never null), and every problem is a bad_request *Error whose message starts with the field's name.
// Every request body, the prefs and the policy file are read through it.
type Object map[string]json.RawMessage

// AsObject reads raw as exactly one JSON object; what names it in errors ("body").
func AsObject(raw json.RawMessage, what string) (Object, *Error) {
	if raw == nil {
		return nil, Errorf(CodeBadRequest, "%s: missing", what)
	}
	o, ok := object(raw)
	if !ok {
		return nil, Errorf(CodeBadRequest, "%s: must be an object", what)
	}
	return Object(o), nil
}

// Has reports whether the field is present (null counts as present).
func (o Object) Has(name string) bool {
	_, ok := o[name]
	return ok
}

// Null reports whether the field is present and null.
func (o Object) Null(name string) bool { return string(o[name]) == "null" }

func (o Object) raw(name string) (json.RawMessage, *Error) {
	raw, ok := o[name]
	if !ok {
		return nil, Errorf(CodeBadRequest, "%s: missing", name)
	}
	return raw, nil
}

// String reads a string of at most maxLen bytes (maxLen < 0: no limit).
func (o Object) String(name string, maxLen int) (string, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return "", err
	}
	var s string
	// Checking the quote matters: json.Unmarshal of null into a string succeeds and leaves it empty.
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", Errorf(CodeBadRequest, "%s: must be a string", name)
	}
	if maxLen >= 0 && len(s) > maxLen {
		return "", Errorf(CodeBadRequest, "%s: must be at most %d bytes", name, maxLen)
	}
	return s, nil
}

// OneOf reads a string that must be one of allowed.
func (o Object) OneOf(name string, allowed ...string) (string, *Error) {
	v, err := o.String(name, -1)
	if err != nil {
		return "", err
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", Errorf(CodeBadRequest, "%s: must be one of %s", name, strings.Join(allowed, ", "))
}

// Int reads an integer literal in lo … hi.
func (o Object) Int(name string, lo, hi int64) (int64, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return 0, err
	}
	return IntValue(raw, name, lo, hi)
}

// IntOrNull reads null (nil) or an integer literal in lo … hi.
func (o Object) IntOrNull(name string, lo, hi int64) (*int64, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, nil
	}
	n, err := IntValue(raw, name, lo, hi)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "%s: must be null or an integer %d to %d", name, lo, hi)
	}
	return &n, nil
}

// IntValue reads one integer literal in lo … hi; name is for the message.
func IntValue(raw json.RawMessage, name string, lo, hi int64) (int64, *Error) {
	n, ok := parseInt(raw)
	if !ok {
		if len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) && bytes.IndexAny(raw, ".eE") < 0 {
			return 0, Errorf(CodeBadRequest, "%s: must be %d to %d", name, lo, hi) // all digits, beyond 64 bits
		}
		return 0, Errorf(CodeBadRequest, "%s: must be an integer", name)
	}
	if n < lo || n > hi {
		return 0, Errorf(CodeBadRequest, "%s: must be %d to %d", name, lo, hi)
	}
	return n, nil
}

// Number reads a finite JSON number in lo … hi.
func (o Object) Number(name string, lo, hi float64) (float64, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return 0, err
	}
	var f float64
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) || json.Unmarshal(raw, &f) != nil {
		return 0, Errorf(CodeBadRequest, "%s: must be a number", name)
	}
	if f < lo || f > hi {
		return 0, Errorf(CodeBadRequest, "%s: must be %s to %s", name, fmtNum(lo), fmtNum(hi))
	}
	return f, nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// Bool reads true or false.
func (o Object) Bool(name string) (bool, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return false, err
	}
	switch string(raw) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, Errorf(CodeBadRequest, "%s: must be a boolean", name)
}

// BoolOrNull reads true, false or null (nil).
func (o Object) BoolOrNull(name string) (*bool, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return nil, err
	}
	if string(raw) == "null" {
		return nil, nil
	}
	b, err := o.Bool(name)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "%s: must be a boolean or null", name)
	}
	return &b, nil
}

// Array reads an array of at most max items (their values unread).
func (o Object) Array(name string, max int) ([]json.RawMessage, *Error) {
	raw, err := o.raw(name)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, Errorf(CodeBadRequest, "%s: must be an array", name)
	}
	if len(items) > max {
		return nil, Errorf(CodeBadRequest, "%s: more than %d", name, max)
	}
	return items, nil
}

// Field is the message of err without its leading field name, for callers that report problems their own way.
func (e *Error) Field() (field, problem string) {
	f, p, ok := strings.Cut(e.Message, ": ")
	if !ok {
		return "", e.Message
	}
	return f, p
}

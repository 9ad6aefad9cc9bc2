package protocol

import "strconv"

// Version is the protocol version every message carries in "v".
const Version = 1

// Code is an error code of PROTOCOL.md §6. The list is append-only: a published code keeps its number and meaning.
type Code int

const (
	CodeInternal           Code = 1  // the host failed; the message says how
	CodeBadFrame           Code = 2  // a zero-length frame
	CodeFrameTooLarge      Code = 3  // the length exceeds the 64 KiB input cap; the host then exits
	CodeBadJSON            Code = 4  // the payload is not one JSON object
	CodeBadUTF8            Code = 5  // the payload is not valid UTF-8
	CodeUnsupportedVersion Code = 6  // v is not 1, or hello lists no supported protocol
	CodeUnknownType        Code = 7  // the request type is not one of §4
	CodeBadRequest         Code = 8  // a field is missing, of the wrong type or out of range
	CodeBadOrigin          Code = 9  // the origin is not a valid http(s) origin
	CodePolicyUnavailable  Code = 10 // the policy model could not be loaded
	CodeStoreUnavailable   Code = 11 // the host's store could not be opened or written
	CodeRateLimited        Code = 12 // a request type's budget is spent; nothing was changed
)

var codeNames = map[Code]string{
	CodeInternal:           "internal",
	CodeBadFrame:           "bad_frame",
	CodeFrameTooLarge:      "frame_too_large",
	CodeBadJSON:            "bad_json",
	CodeBadUTF8:            "bad_utf8",
	CodeUnsupportedVersion: "unsupported_version",
	CodeUnknownType:        "unknown_type",
	CodeBadRequest:         "bad_request",
	CodeBadOrigin:          "bad_origin",
	CodePolicyUnavailable:  "policy_unavailable",
	CodeStoreUnavailable:   "store_unavailable",
	CodeRateLimited:        "rate_limited",
}

// Name is the code's name in PROTOCOL.md, or "code_N" for a number the table does not have.
func (c Code) Name() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "code_" + strconv.Itoa(int(c))
}

func (c Code) String() string { return c.Name() }

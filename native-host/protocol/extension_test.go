package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// Chrome derives an extension's ID from its public key: the first 128 bits of SHA-256 of the DER bytes, each hex
// digit 0-f written as a letter a-p. The key the extension build puts in the manifest must give ExtensionID.
func TestExtensionIDMatchesKey(t *testing.T) {
	raw, err := os.ReadFile("../../extension/key.txt")
	if err != nil {
		t.Fatal(err)
	}
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("extension/key.txt is not base64: %v", err)
	}
	sum := sha256.Sum256(der)
	var id strings.Builder
	for _, c := range hex.EncodeToString(sum[:16]) {
		if c <= '9' {
			id.WriteByte(byte('a' + c - '0'))
		} else {
			id.WriteByte(byte('a' + 10 + c - 'a'))
		}
	}
	if id.String() != ExtensionID {
		t.Fatalf("extension/key.txt gives ID %s, ExtensionID is %s", id.String(), ExtensionID)
	}
	if ExtensionOrigin != "chrome-extension://"+id.String()+"/" {
		t.Fatalf("ExtensionOrigin %s", ExtensionOrigin)
	}
}

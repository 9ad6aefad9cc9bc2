package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// PathClasses says how an export writes path classes: pseudonymous (the default) or as the log keeps them.
type PathClasses int

const (
	// PathsPseudonymous replaces each path-class segment that is not made of known structural words (pathWords)
	// with a token keyed by this log's own secret: the same segment gives the same token throughout one log, so a
	// researcher still sees which loads were of one page kind, and another user's log gives another token, so
	// tokens are not compared or looked up across logs. /account/alice.smith/reset/:id →
	// /account/:p-1a2b3c4d5e/reset/:id.
	PathsPseudonymous PathClasses = iota
	// PathsRaw writes path classes as the log keeps them: for a user exporting a log for themselves.
	PathsRaw
)

// ParsePathClasses reads the export flag's value: raw or pseudonymous.
func ParsePathClasses(s string) (PathClasses, error) {
	switch s {
	case "pseudonymous":
		return PathsPseudonymous, nil
	case "raw":
		return PathsRaw, nil
	}
	return 0, fmt.Errorf("path classes %q: must be raw or pseudonymous", s)
}

// pseudonymKey is the secrets row of the log's HMAC key for path-class tokens.
const pseudonymKey = "path_class_hmac"

// exportKey returns this log's key for path-class tokens, made (32 random bytes) at its first export. It lives in
// the log itself: deleting the log (DeleteAll) deletes it, and a new log gets a new one.
func (s *Store) exportKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return nil, err
	}
	var key []byte
	err := s.with(func(db *sql.DB) error {
		if _, err := db.ExecContext(ctx, "INSERT OR IGNORE INTO secrets (name, value) VALUES (?, ?)", pseudonymKey, fresh); err != nil {
			return err
		}
		return db.QueryRowContext(ctx, "SELECT value FROM secrets WHERE name = ?", pseudonymKey).Scan(&key)
	})
	if err != nil {
		return nil, fmt.Errorf("the export key: %w", err)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("the export key: %d bytes, want 32", len(key))
	}
	return key, nil
}

// PseudonymousClass returns class (a PathClass) with each segment that holds a word outside pathWords replaced by
// ":p-" and the first 40 bits of HMAC-SHA256(key, segment) in hex. The classifier's own placeholders (":id", ":n",
// "*") and segments of known words only ("article", "page-:n", "v:n") stay. Anything unusual (non-letters beyond
// separators, percent-encoding, words of any language not listed) is replaced: a missing word costs a researcher
// readability, never a user their privacy.
func PseudonymousClass(class string, key []byte) string {
	if class == "" || class == "/" {
		return class
	}
	segs := strings.Split(strings.TrimPrefix(class, "/"), "/")
	for i, seg := range segs {
		if structural(seg) {
			continue
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(seg))
		segs[i] = ":p-" + hex.EncodeToString(m.Sum(nil)[:5])
	}
	return "/" + strings.Join(segs, "/")
}

// structural says whether a class segment is made of the classifier's placeholders, separators and known words
// only: its words are the runs of letters once ":n" and ":id" are taken out.
func structural(seg string) bool {
	if seg == ":id" || seg == "*" {
		return true
	}
	rest := strings.ReplaceAll(seg, ":id", "/")
	rest = strings.ReplaceAll(rest, ":n", "/")
	for _, r := range rest {
		// The separators path words are joined with; anything else (%, :, @, ~ …) may carry a name or a token.
		if !unicode.IsLetter(r) && !strings.ContainsRune("/-_.", r) {
			return false
		}
	}
	for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if !pathWords[w] {
			return false
		}
	}
	return true
}

// pseudonymizeRow rewrites r's path class, and the decision's inputs.path_class, with PseudonymousClass.
func pseudonymizeRow(r *Row, key []byte) error {
	if r.PathClass != nil {
		p := PseudonymousClass(*r.PathClass, key)
		r.PathClass = &p
	}
	var dec map[string]json.RawMessage
	if err := json.Unmarshal([]byte(r.Decision), &dec); err != nil || dec == nil {
		return nil // not an object: no inputs to rewrite (exported as logged)
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(dec["inputs"], &in); err != nil || in == nil {
		return nil
	}
	var class string
	if err := json.Unmarshal(in["path_class"], &class); err != nil {
		return nil
	}
	var err error
	if in["path_class"], err = json.Marshal(PseudonymousClass(class, key)); err != nil {
		return err
	}
	if dec["inputs"], err = json.Marshal(in); err != nil {
		return err
	}
	out, err := json.Marshal(dec)
	if err != nil {
		return err
	}
	r.Decision = string(out)
	return nil
}

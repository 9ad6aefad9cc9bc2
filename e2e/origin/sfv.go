package origin

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file parses and serialises RFC 9651 Structured Field Dictionaries, enough to
// check the Multipath-Policy header (PROTOCOL.md §7) exactly as the RFC's parsing
// algorithms (§4.2) describe. Serialising exists so the fuzz target can check that
// parse(serialise(parse(x))) == parse(x).

// BareKind is the type of a bare item.
type BareKind uint8

const (
	KindInteger BareKind = iota + 1
	KindDecimal
	KindString
	KindToken
	KindBytes
	KindBoolean
	KindDate
	KindDisplayString
)

var bareKindNames = map[BareKind]string{
	KindInteger: "Integer", KindDecimal: "Decimal", KindString: "String", KindToken: "Token",
	KindBytes: "Byte Sequence", KindBoolean: "Boolean", KindDate: "Date", KindDisplayString: "Display String",
}

func (k BareKind) String() string { return bareKindNames[k] }

// Bare is a bare item. Int holds Integers, Dates, Booleans (0 or 1) and Decimals (in
// thousandths: RFC 9651 Decimals have at most three fractional digits, so this is exact).
// Str holds Strings, Tokens and Display Strings; Bytes holds Byte Sequences.
type Bare struct {
	Kind  BareKind
	Int   int64
	Str   string
	Bytes []byte
}

// Param is one parameter.
type Param struct {
	Key   string
	Value Bare
}

// Item is a bare item with parameters.
type Item struct {
	Value  Bare
	Params []Param
}

// Member is a dictionary member: an Item, or an Inner List (Inner set) with parameters.
type Member struct {
	Key    string
	Inner  bool
	Item   Item
	List   []Item
	Params []Param // the inner list's own parameters
}

// Dictionary is an ordered map from key to member.
type Dictionary []Member

// Get returns the member named key.
func (d Dictionary) Get(key string) (Member, bool) {
	for _, m := range d {
		if m.Key == key {
			return m, true
		}
	}
	return Member{}, false
}

// SyntaxError tells where parsing failed.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("structured field: %s at byte %d", e.Msg, e.Offset)
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) fail(msg string) error { return &SyntaxError{Offset: p.i, Msg: msg} }
func (p *sfParser) eof() bool             { return p.i >= len(p.s) }
func (p *sfParser) peek() byte            { return p.s[p.i] }

func (p *sfParser) skipSP() {
	for !p.eof() && p.peek() == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.i++
	}
}

// ParseDictionary parses a field value (all field lines already joined with ", ").
func ParseDictionary(s string) (Dictionary, error) {
	p := &sfParser{s: s}
	p.skipSP()
	var d Dictionary
	for !p.eof() {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		m := Member{Key: key}
		if !p.eof() && p.peek() == '=' {
			p.i++
			if err := p.itemOrInnerList(&m); err != nil {
				return nil, err
			}
		} else {
			m.Item.Value = Bare{Kind: KindBoolean, Int: 1}
			if m.Item.Params, err = p.params(); err != nil {
				return nil, err
			}
		}
		d = setMember(d, m)
		p.skipOWS()
		if p.eof() {
			return d, nil
		}
		if p.peek() != ',' {
			return nil, p.fail("expected ','")
		}
		p.i++
		p.skipOWS()
		if p.eof() {
			return nil, p.fail("trailing comma")
		}
	}
	// Only spaces (or nothing): an empty dictionary.
	return d, nil
}

// setMember overwrites a repeated key in place, as RFC 9651 §4.2.2 says.
func setMember(d Dictionary, m Member) Dictionary {
	for i := range d {
		if d[i].Key == m.Key {
			d[i] = m
			return d
		}
	}
	return append(d, m)
}

func setParam(ps []Param, p Param) []Param {
	for i := range ps {
		if ps[i].Key == p.Key {
			ps[i] = p
			return ps
		}
	}
	return append(ps, p)
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool   { return isLCAlpha(c) || (c >= 'A' && c <= 'Z') }
func isDigit(c byte) bool   { return c >= '0' && c <= '9' }

// isTchar is RFC 9110 tchar.
func isTchar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *sfParser) key() (string, error) {
	if p.eof() || !(isLCAlpha(p.peek()) || p.peek() == '*') {
		return "", p.fail("expected a key")
	}
	start := p.i
	for !p.eof() {
		c := p.peek()
		if !(isLCAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

func (p *sfParser) itemOrInnerList(m *Member) error {
	if !p.eof() && p.peek() == '(' {
		m.Inner = true
		p.i++
		m.List = []Item{} // an empty inner list is still a list
		for {
			p.skipSP()
			if p.eof() {
				return p.fail("unterminated inner list")
			}
			if p.peek() == ')' {
				p.i++
				var err error
				m.Params, err = p.params()
				return err
			}
			it, err := p.item()
			if err != nil {
				return err
			}
			m.List = append(m.List, it)
			if p.eof() || (p.peek() != ' ' && p.peek() != ')') {
				return p.fail("expected ' ' or ')' in inner list")
			}
		}
	}
	it, err := p.item()
	m.Item = it
	return err
}

func (p *sfParser) item() (Item, error) {
	v, err := p.bare()
	if err != nil {
		return Item{}, err
	}
	ps, err := p.params()
	return Item{Value: v, Params: ps}, err
}

func (p *sfParser) params() ([]Param, error) {
	var ps []Param
	for !p.eof() && p.peek() == ';' {
		p.i++
		p.skipSP()
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		v := Bare{Kind: KindBoolean, Int: 1}
		if !p.eof() && p.peek() == '=' {
			p.i++
			if v, err = p.bare(); err != nil {
				return nil, err
			}
		}
		ps = setParam(ps, Param{Key: k, Value: v})
	}
	return ps, nil
}

func (p *sfParser) bare() (Bare, error) {
	if p.eof() {
		return Bare{}, p.fail("expected an item")
	}
	switch c := p.peek(); {
	case c == '-' || isDigit(c):
		return p.number()
	case c == '"':
		s, err := p.str()
		return Bare{Kind: KindString, Str: s}, err
	case c == '*' || isAlpha(c):
		return Bare{Kind: KindToken, Str: p.token()}, nil
	case c == ':':
		b, err := p.byteSeq()
		return Bare{Kind: KindBytes, Bytes: b}, err
	case c == '?':
		p.i++
		if p.eof() || (p.peek() != '0' && p.peek() != '1') {
			return Bare{}, p.fail("expected ?0 or ?1")
		}
		v := int64(p.peek() - '0')
		p.i++
		return Bare{Kind: KindBoolean, Int: v}, nil
	case c == '@':
		p.i++
		b, err := p.number()
		if err == nil && b.Kind != KindInteger {
			err = p.fail("a Date must be an Integer")
		}
		return Bare{Kind: KindDate, Int: b.Int}, err
	case c == '%':
		s, err := p.displayString()
		return Bare{Kind: KindDisplayString, Str: s}, err
	}
	return Bare{}, p.fail("unexpected character")
}

// number follows RFC 9651 §4.2.4: at most 15 integer digits, or at most 12 digits, a dot
// and 1-3 digits.
func (p *sfParser) number() (Bare, error) {
	neg := false
	if !p.eof() && p.peek() == '-' {
		neg = true
		p.i++
	}
	if p.eof() || !isDigit(p.peek()) {
		return Bare{}, p.fail("expected a digit")
	}
	start := p.i
	dot := -1
	for !p.eof() {
		c := p.peek()
		if isDigit(c) {
			p.i++
		} else if c == '.' && dot < 0 {
			if p.i-start > 12 {
				return Bare{}, p.fail("decimal with more than 12 integer digits")
			}
			dot = p.i
			p.i++
		} else {
			break
		}
		if dot < 0 && p.i-start > 15 {
			return Bare{}, p.fail("integer with more than 15 digits")
		}
		if dot >= 0 && p.i-start > 16 {
			return Bare{}, p.fail("decimal too long")
		}
	}
	num := p.s[start:p.i]
	if dot < 0 {
		v, _ := strconv.ParseInt(num, 10, 64) // at most 15 digits: cannot overflow
		if neg {
			v = -v
		}
		return Bare{Kind: KindInteger, Int: v}, nil
	}
	frac := p.s[dot+1 : p.i]
	if len(frac) == 0 {
		return Bare{}, p.fail("decimal ends with '.'")
	}
	if len(frac) > 3 {
		return Bare{}, p.fail("decimal with more than 3 fractional digits")
	}
	ip, _ := strconv.ParseInt(p.s[start:dot], 10, 64)
	fp, _ := strconv.ParseInt(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
	v := ip*1000 + fp
	if neg {
		v = -v
	}
	return Bare{Kind: KindDecimal, Int: v}, nil
}

func (p *sfParser) str() (string, error) {
	p.i++ // opening quote
	var b strings.Builder
	for !p.eof() {
		c := p.peek()
		p.i++
		switch {
		case c == '\\':
			if p.eof() || (p.peek() != '"' && p.peek() != '\\') {
				return "", p.fail("bad escape in string")
			}
			b.WriteByte(p.peek())
			p.i++
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			p.i--
			return "", p.fail("non-printable character in string")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.fail("unterminated string")
}

func (p *sfParser) token() string {
	start := p.i
	p.i++
	for !p.eof() && (isTchar(p.peek()) || p.peek() == ':' || p.peek() == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *sfParser) byteSeq() ([]byte, error) {
	p.i++ // opening colon
	end := strings.IndexByte(p.s[p.i:], ':')
	if end < 0 {
		return nil, p.fail("unterminated byte sequence")
	}
	enc := p.s[p.i : p.i+end]
	for j := 0; j < len(enc); j++ {
		c := enc[j]
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			p.i += j
			return nil, p.fail("bad character in byte sequence")
		}
	}
	// RFC 9651 §4.2.7: parsers should accept missing padding.
	b, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(enc, "="))
	if err != nil {
		return nil, p.fail("bad base64 in byte sequence")
	}
	p.i += end + 1
	return b, nil
}

func isLCHex(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') }

func (p *sfParser) displayString() (string, error) {
	p.i++ // '%'
	if p.eof() || p.peek() != '"' {
		return "", p.fail("expected '\"' after '%'")
	}
	p.i++
	var b []byte
	for !p.eof() {
		c := p.peek()
		p.i++
		switch {
		case c < 0x20 || c > 0x7e:
			p.i--
			return "", p.fail("non-printable character in display string")
		case c == '%':
			if p.i+2 > len(p.s) || !isLCHex(p.s[p.i]) || !isLCHex(p.s[p.i+1]) {
				return "", p.fail("bad percent-encoding in display string")
			}
			v, _ := strconv.ParseUint(p.s[p.i:p.i+2], 16, 8)
			b = append(b, byte(v))
			p.i += 2
		case c == '"':
			if !utf8.Valid(b) {
				return "", p.fail("display string is not UTF-8")
			}
			return string(b), nil
		default:
			b = append(b, c)
		}
	}
	return "", p.fail("unterminated display string")
}

// String serialises d (RFC 9651 §4.1).
func (d Dictionary) String() string {
	var b strings.Builder
	for i, m := range d {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(m.Key)
		switch {
		case m.Inner:
			b.WriteString("=(")
			for j, it := range m.List {
				if j > 0 {
					b.WriteByte(' ')
				}
				writeItem(&b, it)
			}
			b.WriteByte(')')
			writeParams(&b, m.Params)
		case m.Item.Value.Kind == KindBoolean && m.Item.Value.Int == 1:
			writeParams(&b, m.Item.Params)
		default:
			b.WriteByte('=')
			writeItem(&b, m.Item)
		}
	}
	return b.String()
}

func writeItem(b *strings.Builder, it Item) {
	writeBare(b, it.Value)
	writeParams(b, it.Params)
}

func writeParams(b *strings.Builder, ps []Param) {
	for _, p := range ps {
		b.WriteByte(';')
		b.WriteString(p.Key)
		if p.Value.Kind != KindBoolean || p.Value.Int != 1 {
			b.WriteByte('=')
			writeBare(b, p.Value)
		}
	}
}

func writeBare(b *strings.Builder, v Bare) {
	switch v.Kind {
	case KindInteger:
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case KindDate:
		b.WriteByte('@')
		b.WriteString(strconv.FormatInt(v.Int, 10))
	case KindDecimal:
		n := v.Int
		if n < 0 {
			b.WriteByte('-')
			n = -n
		}
		frac := strings.TrimRight(fmt.Sprintf("%03d", n%1000), "0")
		if frac == "" {
			frac = "0"
		}
		fmt.Fprintf(b, "%d.%s", n/1000, frac)
	case KindString:
		b.WriteByte('"')
		for i := 0; i < len(v.Str); i++ {
			if v.Str[i] == '"' || v.Str[i] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(v.Str[i])
		}
		b.WriteByte('"')
	case KindToken:
		b.WriteString(v.Str)
	case KindBytes:
		b.WriteByte(':')
		b.WriteString(base64.StdEncoding.EncodeToString(v.Bytes))
		b.WriteByte(':')
	case KindBoolean:
		b.WriteString("?" + strconv.FormatInt(v.Int, 10))
	case KindDisplayString:
		b.WriteString(`%"`)
		for i := 0; i < len(v.Str); i++ {
			c := v.Str[i]
			if c == '%' || c == '"' || c < 0x20 || c > 0x7e {
				fmt.Fprintf(b, "%%%02x", c)
			} else {
				b.WriteByte(c)
			}
		}
		b.WriteByte('"')
	}
}

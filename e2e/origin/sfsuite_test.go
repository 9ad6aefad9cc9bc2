package origin

import (
	"bytes"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// The public structured-field test suite (httpwg/structured-field-tests, copied with its source and licence into
// native-host/vectors/structured-field-tests) run against github.com/dunglas/httpsfv, the RFC 9651 library the Go
// side parses Multipath-Policy (and mph2 Repr-Digest) with. extension/test/sfsuite.test.ts runs the same files
// against the extension's structured-headers. A case a library fails is listed in known-failures.json with why;
// the test fails on any other failure and on a listed case that passes.

const suiteDir = "../../native-host/vectors/structured-field-tests"

// sfCase is one test record (the suite's README describes the format).
type sfCase struct {
	Name       string   `json:"name"`
	Raw        []string `json:"raw"`
	HeaderType string   `json:"header_type"`
	Expected   any      `json:"expected"`
	MustFail   bool     `json:"must_fail"`
	CanFail    bool     `json:"can_fail"`
	Canonical  []string `json:"canonical"`
}

// Bare items of the suite's JSON, typed so that reflect.DeepEqual tells them apart.
type (
	sfToken   string
	sfBinary  string // base32, as the suite writes it
	sfDate    int64
	sfDisplay string
)

// sfBare turns the suite's JSON bare item into a comparable value.
func sfBare(v any) (any, error) {
	switch v := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return v.Float64()
		}
		return v.Int64()
	case string, bool:
		return v, nil
	case map[string]any:
		val := v["value"]
		switch v["__type"] {
		case "token":
			return sfToken(val.(string)), nil
		case "binary":
			return sfBinary(val.(string)), nil
		case "date":
			n, err := val.(json.Number).Int64()
			return sfDate(n), err
		case "displaystring":
			return sfDisplay(val.(string)), nil
		}
	}
	return nil, fmt.Errorf("bare item %#v", v)
}

// goBare turns a bare item of httpsfv into the same comparable value.
func goBare(v any) any {
	switch v := v.(type) {
	case httpsfv.Token:
		return sfToken(v)
	case []byte:
		return sfBinary(base32.StdEncoding.EncodeToString(v))
	case time.Time:
		return sfDate(v.Unix())
	case httpsfv.DisplayString:
		return sfDisplay(v)
	}
	return v
}

// sfParams, sfItem, sfMember and sfValue read the suite's expected structure into [name, value] pairs and
// [bare, params] items, all of comparable values.
func sfParams(v any) ([][2]any, error) {
	var out [][2]any
	for _, p := range v.([]any) {
		pair := p.([]any)
		b, err := sfBare(pair[1])
		if err != nil {
			return nil, err
		}
		out = append(out, [2]any{pair[0].(string), b})
	}
	return out, nil
}

func sfItem(v any) ([2]any, error) {
	pair := v.([]any)
	b, err := sfBare(pair[0])
	if err != nil {
		return [2]any{}, err
	}
	p, err := sfParams(pair[1])
	return [2]any{b, p}, err
}

func sfMember(v any) (any, error) {
	pair := v.([]any)
	if inner, ok := pair[0].([]any); ok { // an inner list: [[items], params]
		var items [][2]any
		for _, it := range inner {
			i, err := sfItem(it)
			if err != nil {
				return nil, err
			}
			items = append(items, i)
		}
		p, err := sfParams(pair[1])
		return [2]any{items, p}, err
	}
	return sfItem(v)
}

func sfValue(headerType string, v any) (any, error) {
	switch headerType {
	case "item":
		return sfItem(v)
	case "list":
		var out []any
		for _, m := range v.([]any) {
			x, err := sfMember(m)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case "dictionary":
		var out [][2]any
		for _, kv := range v.([]any) {
			pair := kv.([]any)
			x, err := sfMember(pair[1])
			if err != nil {
				return nil, err
			}
			out = append(out, [2]any{pair[0].(string), x})
		}
		return out, nil
	}
	return nil, fmt.Errorf("header type %q", headerType)
}

// goValue turns what httpsfv parsed into the same shape.
func goValue(v any) any {
	params := func(p *httpsfv.Params) [][2]any {
		var out [][2]any
		for _, k := range p.Names() {
			x, _ := p.Get(k)
			out = append(out, [2]any{k, goBare(x)})
		}
		return out
	}
	item := func(i httpsfv.Item) [2]any { return [2]any{goBare(i.Value), params(i.Params)} }
	member := func(m httpsfv.Member) any {
		if il, ok := m.(httpsfv.InnerList); ok {
			var items [][2]any
			for _, i := range il.Items {
				items = append(items, item(i))
			}
			return [2]any{items, params(il.Params)}
		}
		return item(m.(httpsfv.Item))
	}
	switch v := v.(type) {
	case httpsfv.Item:
		return item(v)
	case httpsfv.List:
		var out []any
		for _, m := range v {
			out = append(out, member(m))
		}
		return out
	case *httpsfv.Dictionary:
		var out [][2]any
		for _, k := range v.Names() {
			m, _ := v.Get(k)
			out = append(out, [2]any{k, member(m)})
		}
		return out
	}
	panic(fmt.Sprintf("%T", v))
}

// goFrom builds the httpsfv value of the suite's expected structure, for the serialisation tests.
func goFrom(headerType string, v any) (httpsfv.StructuredFieldValue, error) {
	var bad error
	bare := func(x any) any {
		b, err := sfBare(x)
		if err != nil {
			bad = err
			return false
		}
		switch b := b.(type) {
		case sfToken:
			return httpsfv.Token(b)
		case sfBinary:
			raw, err := base32.StdEncoding.DecodeString(string(b))
			if err != nil {
				bad = err
			}
			return raw
		case sfDate:
			return time.Unix(int64(b), 0)
		case sfDisplay:
			return httpsfv.DisplayString(b)
		}
		return b
	}
	params := func(x any) *httpsfv.Params {
		p := httpsfv.NewParams()
		for _, kv := range x.([]any) {
			pair := kv.([]any)
			p.Add(pair[0].(string), bare(pair[1]))
		}
		return p
	}
	item := func(x any) httpsfv.Item {
		pair := x.([]any)
		return httpsfv.Item{Value: bare(pair[0]), Params: params(pair[1])}
	}
	member := func(x any) httpsfv.Member {
		pair := x.([]any)
		if inner, ok := pair[0].([]any); ok {
			il := httpsfv.InnerList{Params: params(pair[1])}
			for _, it := range inner {
				il.Items = append(il.Items, item(it))
			}
			return il
		}
		return item(x)
	}
	var out httpsfv.StructuredFieldValue
	switch headerType {
	case "item":
		out = item(v)
	case "list":
		l := httpsfv.List{}
		for _, m := range v.([]any) {
			l = append(l, member(m))
		}
		out = l
	case "dictionary":
		d := httpsfv.NewDictionary()
		for _, kv := range v.([]any) {
			pair := kv.([]any)
			d.Add(pair[0].(string), member(pair[1]))
		}
		out = d
	default:
		return nil, fmt.Errorf("header type %q", headerType)
	}
	return out, bad
}

func goParse(c sfCase) (any, error) {
	switch c.HeaderType {
	case "item":
		return httpsfv.UnmarshalItem(c.Raw)
	case "list":
		return httpsfv.UnmarshalList(c.Raw)
	case "dictionary":
		return httpsfv.UnmarshalDictionary(c.Raw)
	}
	return nil, fmt.Errorf("header type %q", c.HeaderType)
}

// sfRun checks one case: a parse test (raw) parses to expected and serialises to canonical (or raw), or fails to
// parse when it must; a serialisation test (no raw) serialises expected to canonical, or fails when it must. It
// returns why the case failed, or "".
func sfRun(c sfCase) (string, error) {
	want := ""
	if len(c.Canonical) > 0 {
		want = c.Canonical[0]
	} else if len(c.Raw) > 0 && c.Canonical == nil {
		want = c.Raw[0]
	}
	var v httpsfv.StructuredFieldValue
	if c.Raw != nil {
		got, err := goParse(c)
		switch {
		case c.MustFail && err == nil:
			return "parsed, must fail", nil
		case c.MustFail:
			return "", nil
		case err != nil && c.CanFail:
			return "", nil
		case err != nil:
			return fmt.Sprintf("parse: %v", err), nil
		}
		exp, err := sfValue(c.HeaderType, c.Expected)
		if err != nil {
			return "", err
		}
		if g := goValue(got); !reflect.DeepEqual(g, exp) && !(isEmpty(g) && isEmpty(exp)) {
			return fmt.Sprintf("parsed %v, want %v", g, exp), nil
		}
		v = got.(httpsfv.StructuredFieldValue)
	} else {
		var err error
		if v, err = goFrom(c.HeaderType, c.Expected); err != nil {
			return "", err
		}
	}
	out, err := httpsfv.Marshal(v)
	switch {
	case c.MustFail && err == nil:
		return fmt.Sprintf("serialised as %q, must fail", out), nil
	case c.MustFail:
		return "", nil
	case err != nil:
		return fmt.Sprintf("serialise: %v", err), nil
	case out != want:
		return fmt.Sprintf("serialised as %q, want %q", out, want), nil
	}
	return "", nil
}

func isEmpty(v any) bool { return reflect.ValueOf(v).Len() == 0 }

// sfSuite reads every case of the suite, keyed "file: name".
func sfSuite(t *testing.T) map[string]sfCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(suiteDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob(filepath.Join(suiteDir, "serialisation-tests", "*.json"))
	cases := map[string]sfCase{}
	for _, f := range append(files, more...) {
		rel, _ := filepath.Rel(suiteDir, f)
		if rel == "known-failures.json" {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var list []sfCase
		if err := dec.Decode(&list); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, c := range list {
			cases[rel+": "+c.Name] = c
		}
	}
	if len(cases) < 1000 {
		t.Fatalf("only %d cases in %s", len(cases), suiteDir)
	}
	return cases
}

// knownFailures reads the list for one side ("go" or "ts").
func knownFailures(t *testing.T, side string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(suiteDir, "known-failures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]map[string]string
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	return all[side]
}

func TestStructuredFieldSuite(t *testing.T) {
	cases := sfSuite(t)
	known := knownFailures(t, "go")
	names := make([]string, 0, len(cases))
	for k := range cases {
		names = append(names, k)
	}
	sort.Strings(names)
	failed := 0
	for _, name := range names {
		why, err := sfRun(cases[name])
		if err != nil {
			t.Fatalf("%s: reading the case: %v", name, err)
		}
		_, listed := known[name]
		switch {
		case why != "" && !listed:
			t.Errorf("%s: %s", name, why)
		case why == "" && listed:
			t.Errorf("%s: listed as a known failure of httpsfv but passes: take it off known-failures.json", name)
		}
		if why != "" {
			failed++
		}
	}
	for name := range known {
		if _, ok := cases[name]; !ok {
			t.Errorf("known-failures.json lists %q, which is not in the suite", name)
		}
	}
	t.Logf("httpsfv: %d of %d cases pass, %d known failures", len(cases)-failed, len(cases), failed)
}

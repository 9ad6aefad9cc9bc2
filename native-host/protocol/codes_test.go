package protocol

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The Go constants mirror PROTOCOL.md §6 exactly, in both directions.
func TestCodesMatchProtocolDoc(t *testing.T) {
	doc, err := os.ReadFile("../PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## 6. Error codes")
	if !ok {
		t.Fatal("PROTOCOL.md has no section 6")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| (\\d+) \\| `([a-z_0-9]+)` \\|")
	rows := row.FindAllStringSubmatch(section, -1)
	if len(rows) == 0 {
		t.Fatal("no rows found in the error code table")
	}
	seen := map[Code]bool{}
	for _, r := range rows {
		n, _ := strconv.Atoi(r[1])
		c := Code(n)
		seen[c] = true
		if got := c.Name(); got != r[2] {
			t.Errorf("code %d: Go name %q, PROTOCOL.md %q", n, got, r[2])
		}
	}
	for c := range codeNames {
		if !seen[c] {
			t.Errorf("code %d (%s) is not in PROTOCOL.md", c, c.Name())
		}
	}
	if got := Code(99).Name(); got != "code_99" {
		t.Errorf("unknown code name %q", got)
	}
}

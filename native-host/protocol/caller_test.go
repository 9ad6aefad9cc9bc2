package protocol

import (
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

type callerCase struct {
	Name    string   `json:"name"`
	Argv    []string `json:"argv"`
	Result  string   `json:"result"`
	Browser string   `json:"browser"`
	Rest    []string `json:"rest"`
}

func callerVectors(t testing.TB) []callerCase {
	data, err := os.ReadFile("../vectors/callers.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Cases []callerCase }
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("no caller vectors")
	}
	return v.Cases
}

func TestCheckCallerVectors(t *testing.T) {
	for _, tc := range callerVectors(t) {
		t.Run(tc.Name, func(t *testing.T) {
			c, rest, err := CheckCaller(tc.Argv)
			switch tc.Result {
			case "accept":
				if err != nil || c.Browser != tc.Browser || !slices.Equal(rest, tc.Rest) {
					t.Fatalf("%q: %+v %q %v; want %s with %q", tc.Argv, c, rest, err, tc.Browser, tc.Rest)
				}
				want := map[string]string{"chromium": ExtensionID, "firefox": FirefoxAddonID}[c.Browser]
				if c.ID != want {
					t.Fatalf("ID %s, want %s", c.ID, want)
				}
			case "refuse":
				if err == nil || errors.Is(err, ErrNotCaller) || !strings.HasPrefix(err.Error(), "refusing") {
					t.Fatalf("%q: %+v %v; want a refusal", tc.Argv, c, err)
				}
			case "none":
				if !errors.Is(err, ErrNotCaller) {
					t.Fatalf("%q: %+v %v; want ErrNotCaller", tc.Argv, c, err)
				}
			default:
				t.Fatalf("unknown result %q", tc.Result)
			}
		})
	}
}

// A refusal quotes at most a bounded part of what it was given, on one line.
func TestCheckCallerRefusalIsBounded(t *testing.T) {
	long := strings.Repeat("x", 10_000)
	for _, argv := range [][]string{
		{"chrome-extension://" + long + "/"},
		{"/a/org.mpsurf.host.json", long + "\n@x"},
		{"/" + long + "/x.json", FirefoxAddonID},
	} {
		_, _, err := CheckCaller(argv)
		if err == nil || len(err.Error()) > 400 || strings.Contains(err.Error(), "\n") {
			t.Errorf("%.40q: %.100v", argv, err)
		}
	}
}

func FuzzCheckCaller(f *testing.F) {
	for _, tc := range callerVectors(f) {
		f.Add(strings.Join(tc.Argv, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		argv := strings.Split(joined, "\x00")
		c, rest, err := CheckCaller(argv)
		if err != nil {
			return
		}
		// Only the two fixed IDs are ever admitted, each from its own form of start.
		switch {
		case c.Browser == "chromium" && argv[0] == ExtensionOrigin && len(rest) == len(argv)-1:
		case c.Browser == "firefox" && len(argv) >= 2 && argv[1] == FirefoxAddonID && len(rest) == len(argv)-2:
		default:
			t.Fatalf("%q admitted as %+v", argv, c)
		}
	})
}

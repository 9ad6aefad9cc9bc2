package protocol

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated vectors (names.json) from this package's definitions")

// namesFile is the protocol's names as this package defines them, for the extension to check its own lists
// against (PROTOCOL.md §8).
const namesFile = "../vectors/names.json"

func namesVector() []byte {
	whys := make([]string, len(PauseReasons))
	for i, r := range PauseReasons {
		whys[i] = r.Why
	}
	v := struct {
		About        string   `json:"about"`
		RequestTypes []string `json:"request_types"`
		PushTypes    []string `json:"push_types"`
		PauseReasons []string `json:"pause_reasons"`
	}{
		About: "Generated from native-host/protocol (go test ./native-host/protocol -run TestNamesVector -update): the " +
			"request types (PROTOCOL.md §4), the push types (§5) and the reasons a pause may give (§4 Pause). The " +
			"extension's lists are checked against this file.",
		RequestTypes: RequestTypes, PushTypes: PushTypes, PauseReasons: whys,
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return append(b, '\n')
}

// names.json says what this package defines: a name added or removed here reaches the extension's tests.
func TestNamesVector(t *testing.T) {
	want := namesVector()
	if *update {
		if err := os.WriteFile(namesFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(namesFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what native-host/protocol defines; rewrite it with -update:\n%s", namesFile, want)
	}
}

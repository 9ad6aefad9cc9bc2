package protocol

import (
	"encoding/json"
	"os"
	"testing"
)

// relayCase is one case of native-host/vectors/relay.json.
type relayCase struct {
	Name      string `json:"name"`
	Multipath bool   `json:"multipath"`
	Theta1    *int64 `json:"theta1"`
	SizeKnown bool   `json:"size_known"`
	Worth     bool   `json:"worth"`
}

// ReadrelayCases reads the shared relay vectors (path relative to the caller's package directory).
func readrelayCases(t *testing.T, file string) []relayCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []relayCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil || len(v.Cases) == 0 {
		t.Fatalf("%s: %v", file, err)
	}
	return v.Cases
}

func TestWorthRelayVectors(t *testing.T) {
	for _, c := range readrelayCases(t, "../vectors/relay.json") {
		if got := WorthRelay(c.Multipath, c.Theta1, c.SizeKnown); got != c.Worth {
			t.Errorf("%s: worth %v, want %v", c.Name, got, c.Worth)
		}
	}
}

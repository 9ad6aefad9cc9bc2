package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite thresholds.json from decisions.go")

// thresholdsJSON is the decisions benchmark's page classes and targets as decisions.go defines them, for the proxy
// grid's summary (e2e/testbed/proxyreport.mjs reads thresholds.json).
func thresholdsJSON() []byte {
	v := struct {
		About           string  `json:"about"`
		LargePageBytes  int64   `json:"large_page_bytes"`
		SmallPageBytes  int64   `json:"small_page_bytes"`
		TargetGainShare float64 `json:"target_gain_share"`
		TargetCellShare float64 `json:"target_cell_share"`
		TargetRegret    float64 `json:"target_regret"`
	}{
		About: "Generated from e2e/report/decisions.go (go test ./e2e/report -run TestThresholdsFile -update): a large " +
			"page has at least large_page_bytes, a small one fewer than small_page_bytes; the decisions benchmark's targets.",
		LargePageBytes: LargePageBytes, SmallPageBytes: DecisionSmallBytes,
		TargetGainShare: TargetGainShare, TargetCellShare: TargetCellShare, TargetRegret: TargetRegret,
	}
	b, _ := json.MarshalIndent(v, "", " ")
	return append(b, '\n')
}

// thresholds.json says what decisions.go defines: the proxy grid's summary judges by the same classes and targets.
func TestThresholdsFile(t *testing.T) {
	want := thresholdsJSON()
	if *update {
		if err := os.WriteFile("thresholds.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("thresholds.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("thresholds.json is not what decisions.go defines; rewrite it with -update:\n%s", want)
	}
}

package policy

import (
	"os"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// FuzzParse: the loader never panics, and whatever it accepts is a valid policy with a source for every value.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile("../../policy-models/baseline.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"id":"m","version":1,"multipath":false,"theta1_bytes":0,"theta2_bytes":5,"deadline_ms":100,` +
		`"sources":{"multipath":"a","theta1_bytes":"b","theta2_bytes":"c","deadline_ms":"d"}}`))
	f.Add([]byte(`{"theta1_bytes":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.json", data)
		if err != nil {
			return
		}
		for _, k := range modelValues {
			if file.Sources[k] == "" {
				t.Fatalf("accepted without a source for %s", k)
			}
		}
		p := Decide(Input{Model: file, Source: EmbeddedSource(), Revision: 1}).Policy(1)
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted file gives an invalid policy: %v", err)
		}
		if p.Theta1 != nil && *p.Theta1 > protocol.MaxSafeInt {
			t.Fatal("theta1 beyond 2^53")
		}
	})
}

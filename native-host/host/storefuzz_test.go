package host

import (
	"encoding/json"
	"fmt"
	"testing"
)

func FuzzParsePrefs(f *testing.F) {
	f.Add(fmt.Sprintf(goodPrefs, `[{"host":"Bücher.Example","rule":"always"}]`))
	f.Add(fmt.Sprintf(goodPrefs, `[{"host":"[::1]","rule":"never"}]`))
	f.Add(`{"mode":1}`)
	f.Fuzz(func(t *testing.T, body string) {
		p, perr := ParsePrefs(json.RawMessage(body))
		if perr != nil {
			return
		}
		// Normalised prefs are a fixed point: parsing them again changes nothing.
		data, _ := json.Marshal(p)
		again, perr := ParsePrefs(data)
		if perr != nil {
			t.Fatalf("normalised prefs %s refused: %v", data, perr)
		}
		if d2, _ := json.Marshal(again); string(d2) != string(data) {
			t.Fatalf("not a fixed point: %s then %s", data, d2)
		}
	})
}

func FuzzParseReport(f *testing.F) {
	f.Add(`{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1234,"plt_ms":812.5,"multipath":true}`)
	f.Add(`{"origin":"https://a.example","tab":-1,"nav":"x","protocol":"","transfer_bytes":0,"plt_ms":0,"multipath":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		o, perr := parseReport(json.RawMessage(body))
		if perr != nil {
			return
		}
		if o.TransferBytes < 0 || o.TransferBytes > maxTransferBytes || o.PLTms < 0 || o.PLTms > maxPLTms || o.Origin == "" {
			t.Fatalf("accepted out of range: %+v", o)
		}
	})
}

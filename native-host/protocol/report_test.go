package protocol

import (
	"encoding/json"
	"testing"
)

func FuzzParseReport(f *testing.F) {
	f.Add(`{"origin":"https://a.example","tab":3,"nav":"3-1","protocol":"h2","transfer_bytes":1234,"plt_ms":812.5,"multipath":true}`)
	f.Add(`{"origin":"https://a.example","tab":-1,"nav":"x","protocol":"","transfer_bytes":0,"plt_ms":0,"multipath":null}`)
	f.Fuzz(func(t *testing.T, body string) {
		o, perr := ParseReport(json.RawMessage(body))
		if perr != nil {
			return
		}
		if o.TransferBytes < 0 || o.TransferBytes > MaxTransferBytes || o.PLTms < 0 || o.PLTms > MaxPLTms || o.Origin == "" {
			t.Fatalf("accepted out of range: %+v", o)
		}
	})
}

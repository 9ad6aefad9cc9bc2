package protocol

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

type downloadVectors struct {
	Offers []struct {
		Name  string          `json:"name"`
		Error int             `json:"error"`
		Field string          `json:"field"`
		Body  json.RawMessage `json:"body"`
	} `json:"offers"`
	States []struct {
		Name  string          `json:"name"`
		Valid bool            `json:"valid"`
		Body  json.RawMessage `json:"body"`
	} `json:"states"`
}

func readDownloadVectors(t *testing.T) downloadVectors {
	data, err := os.ReadFile("../vectors/downloads.json")
	if err != nil {
		t.Fatal(err)
	}
	var v downloadVectors
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDownloadOfferVectors(t *testing.T) {
	for _, c := range readDownloadVectors(t).Offers {
		t.Run(c.Name, func(t *testing.T) {
			o, perr := ParseDownloadOffer(c.Body, isDirHere)
			code := 0
			if perr != nil {
				code = int(perr.Code)
			}
			if code != c.Error {
				t.Fatalf("code %d (%v), want %d", code, perr, c.Error)
			}
			if perr != nil && !strings.HasPrefix(perr.Message, c.Field) {
				t.Errorf("message %q does not name %s", perr.Message, c.Field)
			}
			if perr == nil && (o.Header.Get("X-Forwarded-For") != "" || o.URL == "" || o.Size <= 0) {
				t.Errorf("parsed %+v", o)
			}
		})
	}
}

// Every state the host sends is one the vectors call valid: the states the host can be in, and their fields.
func TestDownloadStateShape(t *testing.T) {
	for _, c := range readDownloadVectors(t).States {
		var st DownloadState
		dec := json.NewDecoder(strings.NewReader(string(c.Body)))
		dec.DisallowUnknownFields()
		err := dec.Decode(&st)
		known := map[string]bool{DownloadDeclined: true, DownloadStarting: true, DownloadRunning: true, DownloadPaused: true,
			DownloadDone: true, DownloadFailed: true, DownloadCanceled: true}
		if c.Valid && (err != nil || !known[st.State]) {
			t.Errorf("%s: a valid state does not decode into DownloadState: %v", c.Name, err)
		}
	}
}

// isDirHere is ParseDownloadOffer's directory check on this machine.
func isDirHere(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && fi.IsDir()
}

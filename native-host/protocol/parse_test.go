package protocol

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		code    Code // 0: parses
		id      int64
		typ     string
		body    string
	}{
		{"status", `{"v":1,"id":3,"type":"status"}`, 0, 3, "status", ""},
		{"with body", `{"v":1,"id":2,"type":"decide","body":{"a":1}}`, 0, 2, "decide", `{"a":1}`},
		{"whitespace", " \n{ \"v\" : 1 , \"id\" : 7 , \"type\" : \"status\" }\n", 0, 7, "status", ""},
		{"unknown keys ignored", `{"v":1,"id":1,"type":"status","x":[[[1]]],"y":null}`, 0, 1, "status", ""},
		{"largest id", `{"v":1,"id":2147483647,"type":"status"}`, 0, 2147483647, "status", ""},
		{"unknown type parses", `{"v":1,"id":14,"type":"reboot"}`, 0, 14, "reboot", ""},

		{"invalid UTF-8", "{\"v\":1,\"id\":1,\"type\":\"status\",\"x\":\"\xff\xfe\"}", CodeBadUTF8, 0, "", ""},
		{"empty", ``, CodeBadJSON, 0, "", ""},
		{"one brace", `{`, CodeBadJSON, 0, "", ""},
		{"not JSON", `nope`, CodeBadJSON, 0, "", ""},
		{"array", `[1,2]`, CodeBadJSON, 0, "", ""},
		{"string", `"x"`, CodeBadJSON, 0, "", ""},
		{"null", `null`, CodeBadJSON, 0, "", ""},
		{"two objects", `{"v":1}{"v":1}`, CodeBadJSON, 0, "", ""},
		{"trailing comma", `{"v":1,}`, CodeBadJSON, 0, "", ""},
		{"v missing", `{"id":1,"type":"status"}`, CodeBadRequest, 1, "status", ""},
		{"v a string", `{"v":"1","id":1,"type":"status"}`, CodeBadRequest, 1, "status", ""},
		{"v 2", `{"v":2,"id":15,"type":"status"}`, CodeUnsupportedVersion, 15, "status", ""},
		{"v 0", `{"v":0,"id":15,"type":"status"}`, CodeUnsupportedVersion, 15, "status", ""},
		{"v 1.0", `{"v":1.0,"id":1,"type":"status"}`, CodeBadRequest, 1, "status", ""},
		{"id missing", `{"v":1,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id 0", `{"v":1,"id":0,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id negative", `{"v":1,"id":-5,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id 2^31", `{"v":1,"id":2147483648,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id huge", `{"v":1,"id":123456789012345678901234567890,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id a string", `{"v":1,"id":"1","type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id fractional", `{"v":1,"id":1.5,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id exponent", `{"v":1,"id":1e3,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"id null", `{"v":1,"id":null,"type":"status"}`, CodeBadRequest, 0, "", ""},
		{"type missing", `{"v":1,"id":1}`, CodeBadRequest, 0, "", ""},
		{"type a number", `{"v":1,"id":1,"type":5}`, CodeBadRequest, 0, "", ""},
		{"type null", `{"v":1,"id":1,"type":null}`, CodeBadRequest, 0, "", ""},
		{"body a string", `{"v":1,"id":1,"type":"decide","body":"x"}`, CodeBadRequest, 1, "decide", ""},
		{"body null", `{"v":1,"id":1,"type":"decide","body":null}`, CodeBadRequest, 1, "decide", ""},
		{"body an array", `{"v":1,"id":1,"type":"decide","body":[]}`, CodeBadRequest, 1, "decide", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Parse([]byte(tc.payload))
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
			} else if err == nil || err.Code != tc.code {
				t.Fatalf("error %v, want code %d (%s)", err, tc.code, tc.code.Name())
			}
			if req.ID != tc.id || req.Type != tc.typ || string(req.Body) != tc.body {
				t.Errorf("request %d %q %s, want %d %q %s", req.ID, req.Type, req.Body, tc.id, tc.typ, tc.body)
			}
		})
	}
}

// A field error names the field.
func TestParseMessagesNameTheField(t *testing.T) {
	for payload, field := range map[string]string{
		`{"v":1,"id":"1","type":"status"}`:          "id:",
		`{"v":1,"id":1}`:                            "type:",
		`{"id":1,"type":"status"}`:                  "v:",
		`{"v":1,"id":1,"type":"decide","body":"x"}`: "body:",
	} {
		_, err := Parse([]byte(payload))
		if err == nil || !strings.HasPrefix(err.Message, field) {
			t.Errorf("%s: message %v, want it to start with %q", payload, err, field)
		}
	}
}

func TestParseHello(t *testing.T) {
	tests := []struct {
		body string
		code Code
	}{
		{`{"client":"mpsurf-extension","version":"0.1.0","protocols":[1]}`, 0},
		{`{"client":"","version":"","protocols":[2,1]}`, 0},
		{`{"client":"x","version":"9","protocols":[2]}`, CodeUnsupportedVersion},
		{`{"client":"x","version":"9","protocols":[]}`, CodeUnsupportedVersion},
		{`{"client":"x","version":"9"}`, CodeBadRequest},
		{`{"client":"x","version":"9","protocols":1}`, CodeBadRequest},
		{`{"client":"x","version":"9","protocols":["1"]}`, CodeBadRequest},
		{`{"client":"x","version":"9","protocols":[1.0]}`, CodeBadRequest},
		{`{"client":"x","version":"9","protocols":null}`, CodeBadRequest},
		{`{"version":"9","protocols":[1]}`, CodeBadRequest},
		{`{"client":1,"version":"9","protocols":[1]}`, CodeBadRequest},
		{`{"client":"x","protocols":[1]}`, CodeBadRequest},
		{`{"client":"` + strings.Repeat("c", 65) + `","version":"9","protocols":[1]}`, CodeBadRequest},
		{`{"client":"` + strings.Repeat("c", 64) + `","version":"9","protocols":[1]}`, 0},
		{`{"client":"x","version":"` + strings.Repeat("9", 33) + `","protocols":[1]}`, CodeBadRequest},
		{``, CodeBadRequest},
	}
	for _, tc := range tests {
		var body json.RawMessage
		if tc.body != "" {
			body = json.RawMessage(tc.body)
		}
		_, err := ParseHello(body)
		if tc.code == 0 && err != nil || tc.code != 0 && (err == nil || err.Code != tc.code) {
			t.Errorf("%s: error %v, want code %d", tc.body, err, tc.code)
		}
	}
}

func TestParseDecide(t *testing.T) {
	tests := []struct {
		body string
		want Decide
		code Code
	}{
		{`{"origin":"https://example.com","tab":12,"nav":"12-1"}`, Decide{Origin: "https://example.com", Tab: 12, Nav: "12-1"}, 0},
		{`{"origin":"HTTPS://Example.COM:443","tab":-1,"nav":"x"}`, Decide{Origin: "https://example.com", Tab: -1, Nav: "x"}, 0},
		{`{"origin":"https://example.com","tab":2147483647,"nav":"n"}`, Decide{Origin: "https://example.com", Tab: 1<<31 - 1, Nav: "n"}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"` + strings.Repeat("ü", 128) + `"}`, Decide{Origin: "https://example.com", Tab: 1, Nav: strings.Repeat("ü", 128)}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"` + strings.Repeat("ü", 129) + `"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"` + strings.Repeat("n", 128) + `"}`, Decide{Origin: "https://example.com", Tab: 1, Nav: strings.Repeat("n", 128)}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"` + strings.Repeat("n", 129) + `"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":-2,"nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":"/article/7"}`, Decide{Origin: "https://example.com", Tab: 1, Nav: "x", Path: "/article/7"}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"x","model_input":true}`, Decide{Origin: "https://example.com", Tab: 1, Nav: "x", ModelInput: true}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"x","model_input":false}`, Decide{Origin: "https://example.com", Tab: 1, Nav: "x"}, 0},
		{`{"origin":"https://example.com","tab":1,"nav":"x","model_input":1}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","model_input":null}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":"/a?q=1"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":"/a#f"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":"a"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":7}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":"x","path":"/` + strings.Repeat("a", 2048) + `"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":2147483648,"nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":"1","nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":""}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1}`, Decide{}, CodeBadRequest},
		{`{"origin":"https://example.com","tab":1,"nav":7}`, Decide{}, CodeBadRequest},
		{`{"tab":1,"nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":null,"tab":1,"nav":"x"}`, Decide{}, CodeBadRequest},
		{`{"origin":"ftp://example.com","tab":1,"nav":"x"}`, Decide{}, CodeBadOrigin},
		// Field errors win over the origin: the message then names the field that is missing.
		{`{"origin":"ftp://example.com","nav":"x"}`, Decide{}, CodeBadRequest},
		{``, Decide{}, CodeBadRequest},
	}
	for _, tc := range tests {
		var body json.RawMessage
		if tc.body != "" {
			body = json.RawMessage(tc.body)
		}
		got, err := ParseDecide(body)
		if tc.code == 0 {
			if err != nil || got != tc.want {
				t.Errorf("%s: got %+v, %v; want %+v", tc.body, got, err, tc.want)
			}
		} else if err == nil || err.Code != tc.code {
			t.Errorf("%s: error %v, want code %d", tc.body, err, tc.code)
		}
	}
}

package host

import (
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// Without a helper the request is answered, not failed, and says why nothing happened; a page origin that sends
// more than the budget gets rate_limited.
func TestAnnounceServer(t *testing.T) {
	s := embeddedServer(t)
	body := `{"origin":"https://a.test","tab":1,"nav":"1-1","bytes":300000}`
	ok, limited := 0, 0
	for range announceBurst + 2 {
		r := call(t, s, "announce", body)
		switch {
		case r.OK:
			ok++
			if !strings.Contains(string(r.Body), `"joined":false`) || !strings.Contains(string(r.Body), `"actuation":"not_configured"`) {
				t.Fatalf("announce without a helper: %s", r.Body)
			}
		case r.Error != nil && r.Error.Code == int(protocol.CodeRateLimited) && strings.Contains(r.Error.Message, "retry in"):
			limited++
		default:
			t.Fatalf("%+v", r)
		}
	}
	if ok < announceBurst || ok > announceBurst+1 || limited == 0 {
		t.Errorf("%d answered, %d rate limited; want the burst of %d answered and the rest limited", ok, limited, announceBurst)
	}
	if r := call(t, s, "announce", `{"origin":"https://a.test","tab":1,"nav":"1-1","bytes":-3}`); r.OK || r.Error == nil || r.Error.Code != int(protocol.CodeBadRequest) {
		t.Errorf("negative bytes: %+v", r)
	}
}

package host

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mpsurf/mpsurf/native-host/protocol"
)

// A page's peer reports are budgeted per page origin: past the burst the host answers rate_limited (PROTOCOL.md
// §6 code 12) and changes nothing; another origin is not affected.
func TestPeersBudget(t *testing.T) {
	s, _ := storeServer(t)
	body := func(origin string) string {
		return fmt.Sprintf(`{"origin":%q,"tab":1,"peers":[{"host":"cdn.test","ip":"192.0.2.7"}]}`, origin)
	}
	ok, limited := 0, 0
	for range peersBurst + 10 {
		r := call(t, s, "peers", body("https://loop.test"))
		switch {
		case r.OK:
			ok++
		case r.Error != nil && r.Error.Code == int(protocol.CodeRateLimited) && strings.Contains(r.Error.Message, "retry in"):
			limited++
		default:
			t.Fatalf("%+v", r)
		}
	}
	if ok < peersBurst || ok > peersBurst+1 || limited == 0 {
		t.Errorf("%d answered, %d rate limited; want the burst of %d answered and the rest limited", ok, limited, peersBurst)
	}
	if r := call(t, s, "peers", body("https://other.test")); !r.OK {
		t.Errorf("another origin limited too: %+v", r)
	}
}

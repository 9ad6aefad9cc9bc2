package protocol

// WorthRelay says whether a decided site is worth the relay to the user's MPTCP proxy (PROTOCOL.md §4 Proxy): not
// when θ1 is never (a site rule, a pause, a cap, h3, the battery floor: no cellular subflow would come), nor when
// the page's size is known and the decision is single path (the model expects no connection to pass θ1). A page of
// unknown size is, since the relay holds it on WiFi until θ1. The extension mirrors it (extension/src/proxy.ts
// worthRelay), both checked against native-host/vectors/relay.json.
func WorthRelay(multipath bool, theta1 *int64, sizeKnown bool) bool {
	return theta1 != nil && (multipath || !sizeKnown)
}

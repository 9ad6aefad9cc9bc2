// Package calibrate compares the cost-benefit model's transfer curves (native-host/model) with page loads
// measured on the testbed (e2e/report run records), and fits the model numbers the testbed can tell:
// the browser's processing time and the head-of-line discount of multipath.
//
// # Page model
//
// The model predicts single transfers; a page is many. The corpus pages (e2e/corpus) are flat: a landing
// document that references every object directly, some objects on a second ("third-party") origin. So a load is
//
//   - the landing document over a new HTTPS connection: t_main = T(S_main), with T the mode's curve (WiFi alone,
//     cellular alone, or MPTCP with WiFi first);
//   - HTTP/2: the first-party objects continue on the open connection after one round trip for their requests,
//     t_1p = T(S_main + S_1p) + RTT (the window the landing page grew is kept, as Linux keeps it over a pause
//     shorter than the retransmission timeout); the third-party objects open one more connection when the
//     landing page has arrived, t_3p = t_main + T(S_3p);
//   - HTTP/1.1: Chromium opens up to 6 connections per origin (the first-party origin reuses the landing
//     page's); an origin's n objects go over k = min(6, n) connections, ceil(n/k) requests each, one after the
//     other: t_o = t_main + T(S_o/k) + (ceil(n/k) − 1)·RTT;
//   - both share the links, so no load ends before its bytes have crossed them at the mode's rate:
//     t_bw = t_main + RTT + S_rest/R, with R the path's rate, or for MPTCP WiFi's plus hol × cellular's.
//
// The network PLT is the largest of these. The RTT is the first path's. Processing in the browser (parsing,
// decoding, layout, the load event) is not in the curves; it is modelled as a constant per page plus a constant
// per object (model.json page.processing_ms and page.processing_ms_per_object).
//
// # Fit
//
// The processing constants are fitted on the single-path loads only, so that they cannot absorb multipath's
// error: the per-page constant is the median residual (measured − network) of single-object pages, the
// per-object constant the median of (residual − per-page constant)/(objects − 1) over multi-object pages. Then
// hol is the value on the grid 0.00, 0.01, ..., 1.00 that minimises the median absolute percentage error
// (MdAPE) of the multipath loads, with the fitted processing constants. Ties go to the value nearest the file's.
package calibrate

// Package corpus builds the testbed's web pages in memory, deterministically from a seed.
//
// Three built-in sets:
//
//   - "e3": single-object HTML pages of 2, 5, 10, 20, 50 and 100 KB, after seed 001's
//     experiment E3 (small pages, where multipath costs energy for little gain).
//   - "table1": 25 multi-object pages shaped after seed 000 Table 1: the per-type object
//     counts and the total size of each row, 0.06 to 4.45 MB. The table gives counts per
//     type but not bytes per type, so bytes are split with the HTTP Archive end-2014 means
//     recorded in sites.json with their sources.
//   - "mixed" (mixed.json): same-origin sites whose pages lie on both sides of 200 kB and
//     1 MB (a news site with a 60 kB list and 3 MB galleries, a shop, an HTTP/1.1-only
//     forum), so that a decision per origin cannot be right for every page of a site.
//
// Every page belongs to a site with a host name of its own: the e3 and Table 1 pages are
// sites of one page each (<name>.origin.test), the mixed sites have several pages under
// paths of their own. A landing page is served at its host and path, and at /p/<name>/ on
// any host; every other object at /p/<name>/oN.ext on any host (the second origin serves
// them by path). Researchers add sites in the same format (SiteFile) with corpus files.
//
// A landing page references its objects with real tags (link rel=stylesheet, script,
// img, iframe) so a browser fetches them as sub-resources. Some scripts, stylesheets and
// images live on a second origin; Landing renders their absolute URLs for a given
// origin and keeps the landing page's size exact whatever that origin is (up to
// MaxOriginLen bytes). Bodies are random printable characters inside comments (HTML,
// JavaScript, CSS stay valid) or random bytes in ancillary PNG chunks and JPEG comment
// segments (images stay decodable). 1 KB is 1000 bytes.
//
// A Corpus is safe for concurrent use.
package corpus

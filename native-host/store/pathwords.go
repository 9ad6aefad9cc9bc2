package store

import "strings"

// pathWords are the words a path class may keep in a pseudonymous export: the words sites' URL paths are built
// of (sections, actions, resources, formats), none of which names a person. Any other word is replaced
// (PseudonymousClass), so a word missing here only makes an export harder to read, and a word added here must be
// one no user would be known by.
var pathWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
		about account accounts activity add admin ajax album albums amp api app apps archive archives article
		articles asset assets atom audio auth author authors avatar avatars b bin blog blogs board book books browse
		build bundle c cache calendar cart catalog categories category cdn changelog channel channels chapter chat
		checkout cms collection collections comment comments community compare config confirm contact content
		contents create css dashboard data default delete detail details dev dir discover discussion discussions
		dist doc docs download downloads e edit editor embed en entries entry event events explore export faq feed
		feeds file files find font fonts forgot forum forums gallery games get graphql group groups guide guides
		help history home hot html i id image images img import inbox index info issue issues item items js json
		jobs join l latest legal lib library list lists live loc local login logout m main manifest map maps
		media member members message messages min mobile module modules more my new news notifications oauth
		order orders org p page pages password pay payment photo photos pictures player playlist plugins policy
		popular post posts preview pricing print privacy product products profile profiles project projects
		public pull q question questions r read recent register release releases reset resources rss s sale
		script scripts search section sections security service services session settings share shop show
		sign signin signout signup site sitemap sites src start static status store story stories style styles
		support t tag tags team terms thread threads thumb thumbnail thumbnails tile tiles top topic topics
		track trending tv u update upload uploads user users v verify video videos view views watch web webp
		widget widgets wiki world www xml
	`) {
		m[w] = true
	}
	return m
}()

// Runs in each http(s) page at document_idle: once the load event has finished, sends the page's protocol,
// transferred bytes (its own and its third parties', which follow its decision), object and connection counts and
// load time to the service worker, which reports them to the host with the page's path. Nothing about the query,
// the page's content or its resources' names leaves this script.

import { sendMessage } from './browser';

interface Timing {
  type: 'load-timing';
  protocol: string;
  transfer_bytes: number;
  plt_ms: number;
  objects: number;
  conns: number;
}

function measure(): Timing | null {
  const [nav] = performance.getEntriesByType('navigation') as PerformanceNavigationTiming[];
  if (nav === undefined || nav.loadEventEnd <= 0) return null;
  let bytes = nav.transferSize;
  const resources = performance.getEntriesByType('resource') as PerformanceResourceTiming[];
  // New connections to the page's own origin: an entry whose connect phase took time opened one (reused ones and
  // cross-origin entries without Timing-Allow-Origin report zero).
  let conns = nav.connectEnd > nav.connectStart ? 1 : 0;
  // Cross-origin resources without Timing-Allow-Origin report 0: the sum is a lower bound.
  for (const r of resources) {
    bytes += r.transferSize;
    if (r.connectEnd > r.connectStart && r.name.startsWith(location.origin + '/')) conns++;
  }
  return {
    type: 'load-timing',
    protocol: nav.nextHopProtocol.slice(0, 16),
    transfer_bytes: Math.max(0, Math.round(bytes)),
    plt_ms: Math.min(600_000, Math.max(0, nav.loadEventEnd - nav.startTime)),
    objects: Math.min(100_000, 1 + resources.length),
    conns: Math.min(100_000, conns),
  };
}

function send(): void {
  // loadEventEnd is set after the load handlers return, so look one task later.
  setTimeout(() => {
    const t = measure();
    if (t !== null) sendMessage(t).catch(() => undefined);
  }, 0);
}

if (document.readyState === 'complete') send();
else addEventListener('load', send, { once: true });

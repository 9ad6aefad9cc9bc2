// Runs in each http(s) page at document_idle: once the load event has finished, sends the page's protocol,
// transferred bytes and load time to the service worker, which reports them to the host. Nothing about the URL,
// the page's content or its resources' names leaves this script.

import { sendMessage } from './browser';

interface Timing {
  type: 'load-timing';
  protocol: string;
  transfer_bytes: number;
  plt_ms: number;
}

function measure(): Timing | null {
  const [nav] = performance.getEntriesByType('navigation') as PerformanceNavigationTiming[];
  if (nav === undefined || nav.loadEventEnd <= 0) return null;
  let bytes = nav.transferSize;
  // Cross-origin resources without Timing-Allow-Origin report 0: the sum is a lower bound.
  for (const r of performance.getEntriesByType('resource') as PerformanceResourceTiming[]) bytes += r.transferSize;
  return {
    type: 'load-timing',
    protocol: nav.nextHopProtocol.slice(0, 16),
    transfer_bytes: Math.max(0, Math.round(bytes)),
    plt_ms: Math.min(600_000, Math.max(0, nav.loadEventEnd - nav.startTime)),
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

// Turns the service worker's state into the popup's rows of text. Kept apart from popup.ts so it is testable; the
// popup writes these strings with textContent only.

import type { HostStatus } from './host';
import type { PopupState } from './messages';
import type { TabRecord } from './pages';
import type { Policy } from './protocol';

export type Row = [label: string, value: string];

const HOST_WORDS: Record<HostStatus['host'], string> = {
  connected: 'connected',
  connecting: 'connecting',
  missing: 'not installed',
  exited: 'exited',
  error: 'error',
};

export function bytes(n: number | null): string {
  if (n === null) return 'no cap';
  if (n >= 1_000_000) return `${(n / 1_000_000).toLocaleString('en', { maximumFractionDigits: 1 })} MB`;
  if (n >= 1_000) return `${(n / 1_000).toLocaleString('en', { maximumFractionDigits: 1 })} kB`;
  return `${n} B`;
}

function seconds(ms: number | null): string {
  return ms === null ? '–' : `${(ms / 1000).toLocaleString('en', { maximumFractionDigits: 1 })} s`;
}

export function pageRows(page: TabRecord | null): Row[] {
  if (page === null) return [['Decision', 'none yet (only http and https pages get one)']];
  const rows: Row[] = [['Origin', page.origin]];
  const mode = page.source === 'none' ? 'no header sent' : page.multipath ? 'multipath' : 'single path';
  rows.push(['Mode', page.stale ? `${mode} (withdrawn: the network policy applies now)` : mode]);
  rows.push(['Why', page.reason]);
  rows.push([
    'Decided by',
    page.source === 'host'
      ? `host${page.model ? `, model ${page.model.id} v${page.model.version}` : ''}`
      : page.source === 'fallback'
        ? 'extension (safe default)'
        : 'nobody (no host)',
  ]);
  if (page.theta1 !== null) rows.push(['Thresholds', `θ1 ${bytes(page.theta1)}, θ2 ${bytes(page.theta2)}, T ${seconds(page.deadline_ms)}`]);
  if (page.header !== null) rows.push(['Header', page.header]);
  if (page.ruleInstalledAt !== null) {
    rows.push(['Rule ready', `${(page.ruleInstalledAt - page.navStartedAt).toFixed(1)} ms after navigation start`]);
  }
  return rows;
}

export function policyText(p: Policy): string {
  return `${p.multipath ? 'multipath' : 'single path'}; θ1 ${bytes(p.theta1)}, θ2 ${bytes(p.theta2)}, T ${seconds(p.deadline_ms)}`;
}

export function hostRows(s: HostStatus, now = Date.now()): Row[] {
  const rows: Row[] = [['Host', `${HOST_WORDS[s.host]} for ${seconds(Math.max(0, now - s.since))}`], ['Detail', s.detail]];
  if (s.policy !== null) {
    rows.push(['Network', policyText(s.policy)]);
    rows.push(['Because', s.policy.reason]);
    rows.push(['Model', `${s.policy.model.id} v${s.policy.model.version}, policy revision ${s.policy.revision}`]);
  } else {
    rows.push(['Network', 'no policy: no Multipath-Policy header is sent']);
  }
  if (s.reconnects > 0) rows.push(['Reconnects', String(s.reconnects)]);
  return rows;
}

export function popupRows(state: PopupState, now = Date.now()): { page: Row[]; host: Row[] } {
  return { page: pageRows(state.page), host: hostRows(state.status, now) };
}

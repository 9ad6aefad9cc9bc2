// The proxy grid's summary (e2e/testbed/proxyreport.mjs) on records made up for the purpose: the measures follow
// the Decisions issue's definitions, and the verdict flags a shortfall. Logic only; no testbed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { markdown, measures } from './testbed/proxyreport.mjs';

function rec(mode, page, bytes, plt, cell, used = false) {
  return { ok: true, profile: 'p', mode, page, page_bytes: bytes, plt_ms: plt, link_bytes: { wlan0: { rx: 1 }, wwan0: { rx: cell } }, proxy: { server: 'squid/5.7', used } };
}

test('proxy report: gain share on large pages, cellular share on small ones', () => {
  const runs = [
    // large page: sp 10 s, mp-always 10 s (no gain against a TCP-only origin), proxy-always 6 s, proxy-adaptive 6.4 s
    rec('sp-wifi', 'big', 3e6, 10_000, 0), rec('mp-always', 'big', 3e6, 10_000, 0),
    rec('proxy-always', 'big', 3e6, 6_000, 1e6, true), rec('proxy-adaptive', 'big', 3e6, 6_400, 9e5, true),
    rec('proxy-adaptive', 'big', 3e6, 6_200, 9e5, true), rec('proxy-adaptive', 'big', 3e6, 6_600, 9e5, true),
    // small page: proxy-always spends 40 kB of cellular, proxy-adaptive 2 kB (the median of three)
    rec('sp-wifi', 'small', 2e4, 300, 0), rec('mp-always', 'small', 2e4, 300, 0),
    rec('proxy-always', 'small', 2e4, 500, 40_000, true),
    rec('proxy-adaptive', 'small', 2e4, 310, 0), rec('proxy-adaptive', 'small', 2e4, 310, 2_000), rec('proxy-adaptive', 'small', 2e4, 310, 9_000),
    // the rule through the proxy: 7 s on the large page, 30 kB of cellular on the small one
    rec('proxy-rule', 'big', 3e6, 7_000, 8e5, true), rec('proxy-rule', 'small', 2e4, 480, 30_000, true),
    // a failed load counts for nothing
    { ok: false, profile: 'p', mode: 'proxy-always', page: 'big' },
  ];
  const [m] = measures(runs);
  assert.deepEqual(m.large, ['big']);
  assert.deepEqual(m.small, ['small']);
  assert.equal(m.gain_mp_always, 0);
  assert.equal(m.gain_proxy_always, 0.4);
  assert.equal(m.gain_share, (10_000 - 6_400) / (10_000 - 6_000)); // 0.9
  assert.equal(m.cell_share, 2_000 / 40_000); // 0.05
  assert.equal(m.gain_proxy_rule, 0.3);
  assert.equal(m.cell_small_bytes['proxy-rule'], 30_000);
  const md = markdown(runs);
  assert.match(md, /\| p \| 10\.00 \/ 10\.00 \/ 6\.00 \/ 7\.00 \/ 6\.40 \| 0\.0 % \/ 40\.0 % \/ 30\.0 % \/ 36\.0 % \| 0\.90 \| 0 kB \/ 40 kB \/ 30 kB \/ 2 kB \| 0\.05 \|/);
  // An adaptive load under another preference is a row of its own and leaves the verdict's proxy-adaptive alone.
  const saver = markdown([...runs, { ...rec('proxy-adaptive', 'big', 3e6, 9_000, 0), preference: 'battery_saver' }]);
  assert.match(saver, /\| proxy-adaptive \(battery_saver\) \| big \| 3000000 \| 9\.00 \|/);
  assert.match(saver, /\| 0\.90 \|/);
  // Below target: flagged.
  const short = markdown(runs.map((r) => (r.mode === 'proxy-adaptive' && r.page === 'big' ? { ...r, plt_ms: 8_000 } : r)));
  assert.match(short, /0\.50 \(short\)/);
});

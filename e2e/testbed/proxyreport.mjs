// The proxy grid's summary (npm run testbed -- --grid proxy): page-load time and cellular bytes per profile and
// mode, what kernel MPTCP alone gains against a TCP-only origin (mp-always), what the proxy gains (proxy-always),
// and how much of that gain MPSurf's decisions keep (proxy-adaptive), with the Decisions issue's measures: gain share
// on pages of at least 1 MB = Σ(PLT sp-wifi − PLT proxy-adaptive) / Σ(PLT sp-wifi − PLT proxy-always) over the pages'
// medians; small-page cellular share (pages under 200 KB) = Σ cellular rx bytes of proxy-adaptive / of proxy-always.
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../lib/paths.mjs';

// The page classes and targets are the decisions benchmark's (e2e/report/decisions.go, through thresholds.json).
const thresholds = JSON.parse(fs.readFileSync(path.join(root, 'e2e', 'report', 'thresholds.json'), 'utf8'));
export const LARGE = thresholds.large_page_bytes;
export const SMALL = thresholds.small_page_bytes;
export const TARGET_SHARE = thresholds.target_gain_share;
export const TARGET_CELL = thresholds.target_cell_share;

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? NaN : n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
};

// modeOf names a record's mode as the summary groups it: an adaptive load under a preference other than
// performance (the default a fresh install decides with) is its own row, e.g. "proxy-adaptive (battery_saver)".
export function modeOf(r) {
  return r.preference && r.preference !== 'performance' ? `${r.mode} (${r.preference})` : r.mode;
}

// summarise groups ok records by profile, mode and page (medians over repetitions).
export function summarise(records) {
  const by = new Map();
  for (const r of records) {
    if (!r.ok) continue;
    const k = `${r.profile}\t${modeOf(r)}\t${r.page}`;
    if (!by.has(k)) by.set(k, []);
    by.get(k).push(r);
  }
  const cells = new Map(); // profile -> mode -> page -> {plt, cell, bytes, used}
  for (const [k, rs] of by) {
    const [profile, mode, page] = k.split('\t');
    if (!cells.has(profile)) cells.set(profile, new Map());
    const m = cells.get(profile);
    if (!m.has(mode)) m.set(mode, new Map());
    m.get(mode).set(page, {
      plt: median(rs.map((r) => r.plt_ms)),
      cell: median(rs.map((r) => r.link_bytes.wwan0.rx)),
      bytes: rs[0].page_bytes,
      used: rs.filter((r) => r.proxy?.used).length / rs.length,
      n: rs.length,
    });
  }
  return cells;
}

function sumOver(modeMap, pages, f) {
  return pages.reduce((a, p) => a + f(modeMap.get(p)), 0);
}

// measures computes, per profile, the sums the verdict rests on.
export function measures(records) {
  const out = [];
  for (const [profile, modes] of summarise(records)) {
    const sp = modes.get('sp-wifi');
    const mp = modes.get('mp-always');
    const pa = modes.get('proxy-always');
    const ad = modes.get('proxy-adaptive');
    // The rule through the proxy (seed 001 §4.2, carried out per tunnel by the same host and helper): beside
    // proxy-adaptive when the grid ran it, not needed for the verdict.
    const ru = modes.get('proxy-rule');
    const pagesIn = (pred) => [...(sp?.keys() ?? [])].filter((p) => pred(sp.get(p).bytes) && [mp, pa, ad].every((m) => m?.has(p)));
    const large = pagesIn((b) => b >= LARGE);
    const small = pagesIn((b) => b < SMALL);
    const plt = (m) => (m ? sumOver(m, large, (x) => x.plt) : NaN);
    const cell = (m) => (m ? sumOver(m, small, (x) => x.cell) : NaN);
    const s = plt(sp), k = plt(mp), a = plt(pa), d = plt(ad);
    const rulePages = (ps) => ru && ps.every((p) => ru.has(p));
    const r = rulePages(large) ? plt(ru) : NaN;
    out.push({
      profile,
      large,
      small,
      plt_large_s: { 'sp-wifi': s / 1000, 'mp-always': k / 1000, 'proxy-always': a / 1000, 'proxy-rule': r / 1000, 'proxy-adaptive': d / 1000 },
      gain_mp_always: (s - k) / s,
      gain_proxy_always: (s - a) / s,
      gain_proxy_rule: (s - r) / s,
      gain_proxy_adaptive: (s - d) / s,
      gain_share: s - a > 0 ? (s - d) / (s - a) : NaN,
      cell_small_bytes: { 'mp-always': cell(mp), 'proxy-always': cell(pa), 'proxy-rule': rulePages(small) ? cell(ru) : NaN, 'proxy-adaptive': cell(ad) },
      cell_share: cell(pa) > 0 ? cell(ad) / cell(pa) : NaN,
    });
  }
  return out;
}

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(2) : 'n/a');
const pct = (x) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)} %` : 'n/a');
const kb = (x) => (Number.isFinite(x) ? `${(x / 1000).toFixed(0)} kB` : 'n/a');

// markdown renders the summary: per profile and mode, then the verdict against the targets.
export function markdown(records) {
  const lines = ['# Proxy grid', ''];
  const cells = summarise(records);
  for (const [profile, modes] of cells) {
    lines.push(`## ${profile}`, '', '| mode | page | bytes | PLT (s, median) | cellular rx (kB, median) | via proxy | loads |', '| --- | --- | --- | --- | --- | --- | --- |');
    for (const [mode, pages] of modes) {
      for (const [page, x] of [...pages].sort((a, b) => a[1].bytes - b[1].bytes)) {
        lines.push(`| ${mode} | ${page} | ${x.bytes} | ${(x.plt / 1000).toFixed(2)} | ${(x.cell / 1000).toFixed(0)} | ${pct(x.used)} | ${x.n} |`);
      }
    }
    lines.push('');
  }
  lines.push('## Verdict', '', `Targets (the Decisions issue): gain share ≥ ${TARGET_SHARE} on pages ≥ 1 MB, small-page cellular share ≤ ${TARGET_CELL}.`, '');
  lines.push('| profile | large pages: PLT sp-wifi / mp-always / proxy-always / proxy-rule / proxy-adaptive (s, Σ medians) | gain over sp-wifi: mp-always / proxy-always / proxy-rule / proxy-adaptive | gain share | small pages: cellular kB mp-always / proxy-always / proxy-rule / proxy-adaptive | cell share |');
  lines.push('| --- | --- | --- | --- | --- | --- |');
  for (const m of measures(records)) {
    const p = m.plt_large_s;
    const c = m.cell_small_bytes;
    lines.push(`| ${m.profile} | ${f1(p['sp-wifi'])} / ${f1(p['mp-always'])} / ${f1(p['proxy-always'])} / ${f1(p['proxy-rule'])} / ${f1(p['proxy-adaptive'])} | ${pct(m.gain_mp_always)} / ${pct(m.gain_proxy_always)} / ${pct(m.gain_proxy_rule)} / ${pct(m.gain_proxy_adaptive)} | ${f1(m.gain_share)}${m.gain_share >= TARGET_SHARE ? '' : ' (short)'} | ${kb(c['mp-always'])} / ${kb(c['proxy-always'])} / ${kb(c['proxy-rule'])} / ${kb(c['proxy-adaptive'])} | ${f1(m.cell_share)}${m.cell_share <= TARGET_CELL ? '' : ' (over)'} |`);
  }
  return lines.join('\n') + '\n';
}

// The downloads grid: one large file fetched over the testbed's two links by four clients, in random order, one
// run record per download in out/runs.jsonl, then medians and the ratios the MP-H2 issue asks for.
//
//   npm run testbed -- --grid downloads                       # 3 profiles x 4 modes x 3 files x 3 reps
//   npm run testbed -- --grid downloads --profiles baseline --pages 8m.bin --reps 5
//
// Modes (the file comes from the same origin process in every mode):
//   sp-wifi    one HTTP/2 connection over WiFi (mpsurf-host fetch --via wlan0) to the plain-TCP listener
//   mp-always  one HTTP/2 connection over kernel MPTCP (fetch --mptcp) to the MPTCP listener; the in-kernel
//              path manager adds the cellular subflow (testbed mode mp)
//   mph2       MP-H2 over WiFi and cellular (fetch --via wlan0,wwan0 --size N) to the plain-TCP listener; the size
//              is given as the extension gives it (it hands over only downloads whose size Chrome knows), so both
//              paths ask at once (seed 003 §3.6, MP-H2+FS)
//   aria2      Debian's aria2c --multiple-interface=wlan0,wwan0 (HTTP/1.1 segments, two connections) to the
//              plain-TCP listener
import { execFile, execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { CLIENT_NS, Session, diffCounters, originBin, readProfile, shuffle, testbedBin } from './lib.mjs';
import { hostBinary, root } from '../lib/paths.mjs';

export const DOWNLOAD_MODES = ['sp-wifi', 'mp-always', 'mph2', 'aria2'];
const KERNEL_MODE = { 'sp-wifi': 'sp-wifi', 'mp-always': 'mp', mph2: 'sp-wifi', aria2: 'sp-wifi' };
// The origin's plain-TCP listener (e2e/origin --listen-tcp); :443 is its MPTCP one.
const TCP_PORT = 9443;

export function downloadFiles() {
  return JSON.parse(execFileSync(originBin, ['files', '--json'], { encoding: 'utf8' }));
}

function run(cmd, args, timeoutMs) {
  return new Promise((resolve) => {
    const t0 = process.hrtime.bigint();
    execFile(cmd, args, { encoding: 'utf8', timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ err, stdout, stderr, ms: Number(process.hrtime.bigint() - t0) / 1e6 });
    });
  });
}

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

// downloadOnce fetches one file in one mode and returns its run record.
async function downloadOnce(session, { mode, file, rep, runId, dir, cert }) {
  execFileSync(testbedBin, ['mode', KERNEL_MODE[mode]], { stdio: 'pipe' });
  const out = path.join(dir, `${mode}-${file.name}`);
  fs.rmSync(out, { force: true });
  const host = 'origin.test';
  const fetchArgs = ['--ca', cert, '--resolve', `${host}=${session.serverAddr}`, '--json', '-o', out];
  let cmd;
  switch (mode) {
    case 'sp-wifi':
      cmd = [hostBinary, 'fetch', `https://${host}:${TCP_PORT}${file.path}`, '--via', 'wlan0', ...fetchArgs];
      break;
    case 'mp-always':
      cmd = [hostBinary, 'fetch', `https://${host}${file.path}`, '--mptcp', ...fetchArgs];
      break;
    case 'mph2':
      cmd = [hostBinary, 'fetch', `https://${host}:${TCP_PORT}${file.path}`, '--via', 'wlan0,wwan0', '--size', String(file.bytes), ...fetchArgs];
      break;
    case 'aria2':
      // aria2 has no resolver override and the testbed's names are in no DNS, so it asks for the server by
      // address; without a name to check, it is told to skip certificate verification (the origin's certificate
      // is self-signed for the testbed anyway).
      cmd = ['aria2c', '--multiple-interface=wlan0,wwan0', '--split=2', '--max-connection-per-server=2', '--min-split-size=1M',
        '--check-certificate=false', '--allow-overwrite=true', '--auto-file-renaming=false', '--file-allocation=none',
        '--max-tries=1', '--summary-interval=0', '--console-log-level=warn', '--download-result=hide',
        '-d', dir, '-o', path.basename(out), `https://${session.serverAddr}:${TCP_PORT}${file.path}`];
      break;
    default:
      throw new Error(`unknown download mode ${mode}`);
  }
  const rec = {
    run_id: runId, kind: 'download', mode, profile: session.profile, cell_tech: session.cellTech, page: file.name,
    page_bytes: file.bytes, proto: mode === 'aria2' ? 'http/1.1' : 'h2', rep, kernel_mode: KERNEL_MODE[mode], ok: false,
  };
  const before = session.counters();
  const startNs = Date.now() * 1e6;
  const r = await run('ip', ['netns', 'exec', CLIENT_NS, ...cmd], 300_000);
  await new Promise((res) => setTimeout(res, 200)); // the last ACKs and FINs
  const after = session.counters();
  rec.start_unix_ns = startNs;
  rec.plt_ms = r.ms;
  rec.link_bytes = diffCounters(before, after);
  if (mode !== 'aria2') {
    try {
      rec.fetch = JSON.parse(r.stdout.trim().split('\n').pop());
    } catch {
      // no JSON: the error below says why
    }
  }
  if (r.err) {
    rec.error = (rec.fetch?.error || r.stderr || String(r.err.message)).trim().split('\n').pop();
  } else if (!fs.existsSync(out)) {
    rec.error = 'no file';
  } else if (sha256(out) !== file.sha256) {
    rec.error = 'the file differs from the origin\'s';
  } else {
    rec.ok = true;
  }
  fs.rmSync(out, { force: true });
  try {
    execFileSync(testbedBin, ['flush'], { stdio: 'pipe' });
  } catch {}
  return rec;
}


export async function runDownloads(spec, { outDir = path.join(root, 'out'), seed = Date.now(), log = console.log } = {}) {
  // Read first: a wrong id or path fails before anything runs, and a profile file's id names its runs.
  const ids = new Map(spec.profiles.map((p) => [p, readProfile(p).id]));
  for (const m of spec.modes) if (!DOWNLOAD_MODES.includes(m)) throw new Error(`unknown download mode ${m}; one of ${DOWNLOAD_MODES.join(', ')}`);
  const all = downloadFiles();
  const files = spec.pages.map((n) => all.find((f) => f.name === n) ?? (() => { throw new Error(`no file ${n}; one of ${all.map((f) => f.name).join(', ')}`); })());
  fs.mkdirSync(outDir, { recursive: true });
  const runsFile = path.join(outDir, 'runs.jsonl');
  const runId = new Date().toISOString().replace(/[:.]/g, '-');
  const records = [];
  for (const profile of spec.profiles) {
    const jobs = [];
    for (const mode of spec.modes) for (const file of files) for (let rep = 0; rep < spec.reps; rep++) jobs.push({ mode, file, rep });
    shuffle(jobs, seed);
    const dir = fs.mkdtempSync(path.join(outDir, 'dl-'));
    const cert = path.join(dir, 'origin.pem');
    const session = await Session.open({ profile, outDir, log, originArgs: ['--listen-tcp', `:${TCP_PORT}`, '--cert-out', cert] });
    try {
      let i = 0;
      for (const j of jobs) {
        const rec = await downloadOnce(session, { ...j, runId: `${runId}-${ids.get(profile)}-${++i}`, dir, cert });
        fs.appendFileSync(runsFile, JSON.stringify(rec) + '\n');
        records.push(rec);
        log(formatDownload(rec, `${i}/${jobs.length}`));
      }
    } finally {
      await session.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return { records, runsFile };
}

export function formatDownload(r, n = '') {
  const mb = (x) => (x / 1e6).toFixed(2);
  const head = `${n} ${r.profile} ${r.mode.padEnd(9)} ${r.page.padEnd(7)}`;
  if (!r.ok) return `${head} FAILED ${r.error}`;
  const extra = r.fetch ? `  requests ${r.fetch.requests} moves ${r.fetch.moves} dup ${r.fetch.dup_bytes} waste ${r.fetch.waste_bytes}` + (r.fetch.fallback ? `  single path: ${r.fetch.fallback}` : '') : '';
  return `${head} ${(r.plt_ms / 1000).toFixed(2)} s  wlan0 ${mb(r.link_bytes.wlan0.rx)} MB  wwan0 ${mb(r.link_bytes.wwan0.rx)} MB${extra}`;
}

const median = (xs) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// summarize: per profile and file, each mode's median completion time and link bytes; the ratios mph2/mp-always
// and mph2/aria2 of the medians; and the bytes MP-H2 fetched twice (duplicates plus bytes thrown away) as a share
// of the file. Returns the text.
export function summarize(records) {
  const ok = records.filter((r) => r.ok && r.kind === 'download');
  const lines = [];
  const by = (f) => [...new Set(ok.map(f))];
  const failed = records.filter((r) => r.kind === 'download' && !r.ok);
  lines.push(`downloads: ${ok.length} ok, ${failed.length} failed`);
  for (const f of failed) lines.push(`  failed: ${f.profile} ${f.mode} ${f.page}: ${f.error}`);
  const sizes = Object.fromEntries(ok.map((r) => [r.page, r.page_bytes]));
  for (const profile of by((r) => r.profile)) {
    lines.push('', `profile ${profile}`);
    lines.push('  file     mode        n  median s   wlan0 MB  wwan0 MB  overhead   mph2/mp-always  mph2/aria2  mph2 fetched twice');
    for (const page of by((r) => r.page).sort((a, b) => sizes[a] - sizes[b])) {
      const med = {};
      for (const mode of DOWNLOAD_MODES) {
        const rs = ok.filter((r) => r.profile === profile && r.page === page && r.mode === mode);
        if (rs.length === 0) continue;
        med[mode] = median(rs.map((r) => r.plt_ms));
        const wl = median(rs.map((r) => r.link_bytes.wlan0.rx)) / 1e6;
        const ww = median(rs.map((r) => r.link_bytes.wwan0.rx)) / 1e6;
        const over = median(rs.map((r) => (r.link_bytes.wlan0.rx + r.link_bytes.wwan0.rx) / r.page_bytes - 1));
        let tail = '';
        if (mode === 'mph2') {
          const ra = med['mp-always'] ? (med.mph2 / med['mp-always']).toFixed(3) : '-';
          const rb = rs.length && ok.some((r) => r.profile === profile && r.page === page && r.mode === 'aria2')
            ? (med.mph2 / median(ok.filter((r) => r.profile === profile && r.page === page && r.mode === 'aria2').map((r) => r.plt_ms))).toFixed(3)
            : '-';
          const twice = rs.filter((r) => r.fetch).map((r) => (r.fetch.dup_bytes + r.fetch.waste_bytes) / r.page_bytes);
          tail = `   ${ra.padStart(14)}  ${rb.padStart(10)}  ${twice.length ? `max ${(100 * Math.max(...twice)).toFixed(2)} %` : '-'}`;
        }
        lines.push(`  ${page.padEnd(8)} ${mode.padEnd(10)} ${String(rs.length).padStart(2)}  ${(med[mode] / 1000).toFixed(2).padStart(8)}  ${wl.toFixed(2).padStart(8)}  ${ww.toFixed(2).padStart(8)}  ${(100 * over).toFixed(1).padStart(6)} %${tail}`);
      }
    }
  }
  return lines.join('\n');
}

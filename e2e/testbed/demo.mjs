// `npm start` on a machine without a real WiFi + cellular pair: bring the testbed up, load a short demo set
// in MPSurf's own mode, print each decision, write the report under out/.
import fs from 'node:fs';
import path from 'node:path';
import { GRIDS, runGrid, writeReport } from './grid.mjs';
import { root } from '../lib/paths.mjs';

export async function demoTestbed() {
  const outDir = path.join(root, 'out');
  fs.rmSync(path.join(outDir, 'runs.jsonl'), { force: true });
  console.log('Two-path testbed: WiFi 7.04/2.02 Mbit/s 50 ms + LTE 9.185/2.286 Mbit/s 70 ms (seed 000 Table 2), kernel MPTCP, Chromium under mptcpize.');
  const { records } = await runGrid(GRIDS.demo, { outDir, seed: 1 });
  const failed = records.filter((r) => !r.ok);
  console.log(`report: ${writeReport(outDir)}`);
  console.log('The full grid: npm run testbed -- --grid full   (see README)');
  if (failed.length) throw new Error(`${failed.length} of ${records.length} loads failed`);
}

// `npm start`: the main job. On a machine with root and kernel MPTCP (and no real WiFi + cellular
// pair to drive), it runs the two-path testbed demo; otherwise the local slice demo.
import fs from 'node:fs';
import { demoLocal } from './demo-local.mjs';
import { commandLine } from './lib/cli.mjs';

commandLine('start', `usage: npm start   (node e2e/start.mjs after bash scripts/setup.sh)

As root with kernel MPTCP and dist/testbed built, brings the two-path testbed up and loads a short demo set in
MPSurf's own mode, then writes out/report.md; otherwise (or with MPSURF_DEMO=local) runs the local demo: real
Chromium with the extension and the host loading a few local pages.
`);

const isRoot = process.getuid?.() === 0;
const hasMptcp = fs.existsSync('/proc/sys/net/mptcp/enabled');
const testbedBuilt = fs.existsSync(new URL('../dist/testbed', import.meta.url));

async function main() {
  if (isRoot && hasMptcp && testbedBuilt && process.env.MPSURF_DEMO !== 'local') {
    const { demoTestbed } = await import('./testbed/demo.mjs');
    await demoTestbed();
    return;
  }
  const why = !isRoot ? 'not root' : !hasMptcp ? 'the kernel has no MPTCP' : !testbedBuilt ? 'dist/testbed not built' : 'MPSURF_DEMO=local';
  console.log(`Running the local demo (${why}); the two-path testbed needs root and kernel MPTCP.`);
  await demoLocal();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

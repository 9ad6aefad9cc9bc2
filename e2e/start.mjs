// `npm start`: the main job. On a machine with root and kernel MPTCP (and no real WiFi + cellular
// pair to drive), it runs the two-path testbed demo; otherwise the local slice demo.
import fs from 'node:fs';
import { demoLocal } from './demo-local.mjs';

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

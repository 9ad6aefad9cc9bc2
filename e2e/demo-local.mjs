// The slice demo: real Chromium with the extension and the host, loading a few local pages and printing
// each decision and the header the server received. Used by `npm start` when the two-path testbed
// cannot run here (not root, or no MPTCP).
import { launch, makeProfile, untilStatus } from './lib/browser.mjs';
import { startRecorder } from './lib/recorder.mjs';

export async function demoLocal({ pages = 4, headless = !process.env.DISPLAY } = {}) {
  const thirdParty = await startRecorder({ host: 'localhost' });
  const site = await startRecorder({ host: '127.0.0.1', thirdParty: () => thirdParty.origin });
  const profile = makeProfile();
  const { context, worker } = await launch(profile.dir, { headless });
  try {
    const { status } = await untilStatus(worker, (s) => s.host === 'connected' || s.host === 'missing');
    console.log(`host: ${status.host}${status.hostVersion ? ` (mpsurf-host ${status.hostVersion})` : ''}`);
    const page = await context.newPage();
    for (let i = 1; i <= pages; i++) {
      const id = `demo${i}`;
      const t0 = Date.now();
      await page.goto(`${site.origin}/page/${id}`, { waitUntil: 'load' });
      const ms = Date.now() - t0;
      const decisions = await worker.evaluate(() => self.mpsurf.decisions());
      const d = Object.values(decisions).find((x) => x && x.origin === site.origin);
      const seen = [...site.forPage(id), ...thirdParty.forPage(id)];
      const withHeader = seen.filter((r) => r.header).length;
      console.log(
        `${site.origin}/page/${id}  ${ms} ms  ` +
          (d ? `multipath=${d.multipath} θ1=${d.theta1} B θ2=${d.theta2 ?? 'none'} T=${d.deadline_ms} ms — ${d.reason}` : 'no decision') +
          `\n    Multipath-Policy: ${seen[0]?.header ?? '(none)'} on ${withHeader}/${seen.length} requests`,
      );
    }
  } finally {
    await context.close();
    await site.close();
    await thirdParty.close();
    profile.remove();
  }
}

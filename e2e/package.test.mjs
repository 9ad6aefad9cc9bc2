// The extension packages (npm run package:ext): the Chrome Web Store zip and the Firefox xpi carry package.json's
// version and what each browser runs, no source maps, and the zip no "key" (the store refuses one); the xpi, as
// built, installs in Debian's Firefox ESR and gets its decisions from the host. Needs the build; the Firefox part
// needs /usr/bin/firefox-esr.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import JSZip from 'jszip';
import { packageExtension } from '../scripts/package-extension.mjs';
import { launchFirefox, makeFirefoxProfile } from './lib/firefox.mjs';
import { untilStatus } from './lib/browser.mjs';
import { extensionDir, firefoxExtensionDir, firefoxPath, hostBinary, root } from './lib/paths.mjs';

const built = [path.join(extensionDir, 'manifest.json'), path.join(firefoxExtensionDir, 'manifest.json')].filter((p) => !fs.existsSync(p));
const skip = built.length ? `not built: ${built.join(', ')} (run npm run build)` : false;
const version = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;

let pkgs, out;
after(() => out && fs.rmSync(out, { recursive: true, force: true }));

async function entries(file) {
  const zip = await JSZip.loadAsync(fs.readFileSync(file));
  const names = Object.keys(zip.files).filter((n) => !zip.files[n].dir);
  return { names, manifest: JSON.parse(await zip.file('manifest.json').async('string')) };
}

test('package:ext writes the store zip and the xpi, each with its browser’s manifest', { skip }, async () => {
  out = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-pkg-'));
  pkgs = packageExtension({ out, build: false });
  assert.equal(path.basename(pkgs.chrome), `mpsurf-extension-chrome-${version}.zip`);
  assert.equal(path.basename(pkgs.firefox), `mpsurf-extension-firefox-${version}.xpi`);

  const chrome = await entries(pkgs.chrome);
  const firefox = await entries(pkgs.firefox);
  for (const [name, p] of [['chrome', chrome], ['firefox', firefox]]) {
    assert.equal(p.manifest.version, version, name);
    for (const f of ['background.js', 'content.js', 'popup.html', 'popup.js', 'options.html', 'welcome.html', 'icons/128.png']) assert.ok(p.names.includes(f), `${name}: no ${f} in ${p.names}`);
    assert.deepEqual(p.names.filter((n) => n.endsWith('.map')), [], `${name}: source maps packaged`);
  }
  assert.equal(chrome.manifest.key, undefined, 'the store zip has no "key"');
  assert.deepEqual(chrome.manifest.background, { service_worker: 'background.js' });
  assert.equal(firefox.manifest.browser_specific_settings.gecko.id, 'extension@mpsurf');
  assert.deepEqual(firefox.manifest.background, { scripts: ['background.js'] });
  // The build's own Chromium manifest keeps its key (the unpacked build the tests load has the fixed ID).
  assert.ok(JSON.parse(fs.readFileSync(path.join(extensionDir, 'manifest.json'), 'utf8')).key);
});

const ffSkip = skip || (!fs.existsSync(firefoxPath) || !fs.existsSync(hostBinary) ? `not installed: ${firefoxPath} or ${hostBinary}` : false);

test('the packaged xpi installs in Firefox ESR and its host answers', { skip: ffSkip }, async (t) => {
  assert.ok(pkgs, 'the packages were written');
  const profile = makeFirefoxProfile({ prefix: 'mpsurf-xpi-' });
  let ff;
  // Firefox first, then its profile (hooks run in the order they were added).
  t.after(async () => {
    await ff?.close();
    profile.remove();
  });
  ff = await launchFirefox(profile, { extension: pkgs.firefox });
  assert.equal(ff.id, 'extension@mpsurf');
  const { status } = await untilStatus(ff, (s) => s.host === 'connected', 15000);
  assert.match(status.detail, /^mpsurf-host /);
  assert.equal(await ff.call('browser'), 'firefox');
});

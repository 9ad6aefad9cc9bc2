// The two manifests the build writes from static/manifest.json: each browser's fixed ID is the one the host admits
// (native-host/vectors/callers.json), the version is package.json's, and each has what its browser runs.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { vectors } from './vectors';

interface Manifest {
  version: string;
  key?: string;
  background: { service_worker?: string; scripts?: string[] };
  browser_specific_settings?: { gecko: { id: string; strict_min_version: string; data_collection_permissions: unknown } };
  permissions: string[];
  [k: string]: unknown;
}
interface Build {
  manifestFor(browser: 'chromium' | 'firefox', base: object, key: string): Manifest;
  manifestKey(): string;
  extensionId(key: string): string;
  version(): string;
}
interface CallerCase {
  argv: string[];
  result: 'accept' | 'refuse' | 'none';
  browser?: 'chromium' | 'firefox';
}

const build = createRequire(import.meta.url)('../webpack.config.cjs') as Build;
const base = JSON.parse(fs.readFileSync(new URL('../static/manifest.json', import.meta.url), 'utf8')) as object;
const pkg = JSON.parse(fs.readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
const callers = vectors<{ cases: CallerCase[] }>('callers.json').cases;
const key = build.manifestKey();

describe('the built manifests', () => {
  const chromium = build.manifestFor('chromium', base, key);
  const firefox = build.manifestFor('firefox', base, key);

  it('carry the one version, package.json’s', () => {
    expect(chromium.version).toBe(pkg.version);
    expect(firefox.version).toBe(pkg.version);
    expect(build.version()).toBe(pkg.version);
  });

  it('give each browser the ID the host admits from it, and no other', () => {
    const admitted = (b: string) => callers.filter((c) => c.result === 'accept' && c.browser === b);
    const chromiumId = build.extensionId(chromium.key as string);
    for (const c of admitted('chromium')) expect(c.argv[0]).toBe(`chrome-extension://${chromiumId}/`);
    for (const c of admitted('firefox')) expect(c.argv[1]).toBe(firefox.browser_specific_settings?.gecko.id);
    expect(admitted('chromium').length).toBeGreaterThan(0);
    expect(admitted('firefox').length).toBeGreaterThan(0);
    // The other browser's ID is refused in either form.
    expect(callers.some((c) => c.result === 'refuse' && c.argv[1] === chromiumId)).toBe(true);
  });

  it('run a service worker in Chromium and an event page in Firefox, the same script', () => {
    expect(chromium.background).toEqual({ service_worker: 'background.js' });
    expect(firefox.background).toEqual({ scripts: ['background.js'] });
    expect(firefox.key).toBeUndefined();
    expect(firefox.minimum_chrome_version).toBeUndefined();
    expect(firefox.externally_connectable).toBeUndefined();
    expect(firefox.browser_specific_settings?.gecko.strict_min_version).toMatch(/^\d+\.0$/);
    expect(firefox.permissions).toEqual(chromium.permissions);
  });
});

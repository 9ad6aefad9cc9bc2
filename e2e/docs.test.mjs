// The documentation names what is there: native-host/README.md has a row for every Go package under native-host/,
// and no row for one that is gone. Needs Node only.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './lib/paths.mjs';

test('native-host/README.md lists every package', () => {
  const base = path.join(root, 'native-host');
  const pkgs = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      if (!e.isDirectory() || e.name === 'testdata' || e.name === 'vectors') continue;
      const sub = path.join(dir, e.name);
      if (fs.readdirSync(sub).some((f) => f.endsWith('.go') && !f.endsWith('_test.go'))) pkgs.push(path.relative(base, sub));
      walk(sub);
    }
  };
  walk(base);
  const readme = fs.readFileSync(path.join(base, 'README.md'), 'utf8');
  const rows = [...readme.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
  assert.ok(pkgs.length >= 15, `found ${pkgs}`);
  const listed = (p) => rows.includes(p) || (p.includes('/') && !p.startsWith('cmd/') && readme.includes(`\`${p}\``));
  assert.deepEqual(pkgs.filter((p) => !listed(p)).sort(), [], 'packages without a row');
  assert.deepEqual(rows.filter((r) => !pkgs.includes(r)).sort(), [], 'rows for packages that do not exist');
});

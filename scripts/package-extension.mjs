#!/usr/bin/env node
// Packages the built extension (npm run build:ext) for the stores and for administrators, with Mozilla's web-ext
// (its `build` writes the archive), into dist/pkg/ or --out DIR:
//   mpsurf-extension-chrome-VERSION.zip    dist/extension for a Chrome Web Store upload: the manifest without its
//                                          "key", which the store refuses (it signs the item with a key of its own)
//   mpsurf-extension-firefox-VERSION.xpi   dist/extension-firefox, for signing on addons.mozilla.org or an
//                                          installation by policy (extension/README.md)
// VERSION is package.json's, the one version both manifests carry. Source maps stay out of both archives.
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const usage = `usage: npm run package:ext [-- --out DIR]   (node scripts/package-extension.mjs)
Builds the extension (npm run build:ext), then writes the Chrome Web Store zip and the Firefox xpi to DIR
(default dist/pkg). Relative paths are taken from the directory npm was started in.
`;

function parse(argv) {
  let out = path.join(root, 'dist', 'pkg');
  let build = true;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') return { help: true };
    if (a === '--out' && i + 1 < argv.length) out = path.resolve(process.env.INIT_CWD || process.cwd(), argv[++i]);
    else if (a.startsWith('--out=')) out = path.resolve(process.env.INIT_CWD || process.cwd(), a.slice(6));
    else if (a === '--no-build') build = false; // the tests build once before
    else throw new Error(`unknown argument ${a} (--help shows usage)`);
  }
  return { out, build };
}

const readJSON = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

function webExtBuild(sourceDir, outDir, filename) {
  const bin = path.join(root, 'node_modules', '.bin', 'web-ext');
  execFileSync(bin, ['build', '--source-dir', sourceDir, '--artifacts-dir', outDir, '--filename', filename, '--overwrite-dest', '--ignore-files', '**/*.map', '--no-config-discovery'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const file = path.join(outDir, filename);
  const sha = crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  console.log(`${path.relative(process.cwd(), file) || file}  ${fs.statSync(file).size} bytes  sha256 ${sha}`);
  return file;
}

export function packageExtension({ out, build = true }) {
  if (build) execFileSync('npm', ['run', '--silent', 'build:ext'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  const version = readJSON(path.join(root, 'package.json')).version;
  const dirs = { chrome: path.join(root, 'dist', 'extension'), firefox: path.join(root, 'dist', 'extension-firefox') };
  for (const [name, dir] of Object.entries(dirs)) {
    const m = readJSON(path.join(dir, 'manifest.json'));
    if (m.version !== version) throw new Error(`${dir}/manifest.json has version ${m.version}, package.json ${version}: build again`);
    if (name === 'firefox' && m.browser_specific_settings?.gecko?.id === undefined) throw new Error(`${dir} is not the Firefox build`);
  }
  fs.mkdirSync(out, { recursive: true });
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'mpsurf-chrome-store-'));
  try {
    fs.cpSync(dirs.chrome, stage, { recursive: true });
    const m = readJSON(path.join(stage, 'manifest.json'));
    delete m.key;
    fs.writeFileSync(path.join(stage, 'manifest.json'), JSON.stringify(m, null, 2) + '\n');
    return {
      chrome: webExtBuild(stage, out, `mpsurf-extension-chrome-${version}.zip`),
      firefox: webExtBuild(dirs.firefox, out, `mpsurf-extension-firefox-${version}.xpi`),
      version,
    };
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`package-extension: ${e.message}\n`);
    process.exit(2);
  }
  if (args.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  try {
    packageExtension(args);
  } catch (e) {
    process.stderr.write(`package-extension: ${String(e.message).split('\n')[0]}\n`);
    process.exit(1);
  }
}

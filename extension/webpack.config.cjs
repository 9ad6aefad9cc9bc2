// Builds the unpacked MV3 extension from one source tree, twice: dist/extension/ for Chromium (background.js runs as a
// service worker; the manifest gets the "key" that fixes the ID) and dist/extension-firefox/ for Firefox (background.js
// runs as an event page; the manifest gets the fixed add-on ID and no "key"). The JavaScript is the same in both: what
// differs between the browsers is decided at run time in src/browser.ts. The version comes from package.json in both.
// ts-loader type-checks while it compiles the Chromium build; the Firefox build only transpiles the same files.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const CopyPlugin = require('copy-webpack-plugin');

const root = path.resolve(__dirname, '..');
const outDirs = { chromium: path.join(root, 'dist', 'extension'), firefox: path.join(root, 'dist', 'extension-firefox') };

// The ID the native host admits (PROTOCOL.md §1). Chrome derives it from the manifest key: the first 16 bytes of
// SHA-256 over the DER public key, each hex digit 0-f written as a-p.
const EXTENSION_ID = 'ajmpgeaaaphkhppijbmcemhafkpapbmh';

// Firefox's add-on ID, which the native host admits as it admits EXTENSION_ID (PROTOCOL.md §1). Firefox takes it from
// the manifest's browser_specific_settings.gecko.id.
const FIREFOX_ID = 'extension@mpsurf';

// The oldest Firefox the add-on declares: the data_collection_permissions key needs 140, and web-ext lint, which
// checks every manifest key and API the build uses against this version's compatibility data, finds nothing newer.
// 140 is also the oldest ESR Debian 12 ships (bookworm; bookworm-security has 153, which the tests run).
const FIREFOX_MIN_VERSION = '140.0';

function extensionId(derBase64) {
  const hex = crypto.createHash('sha256').update(Buffer.from(derBase64, 'base64')).digest('hex').slice(0, 32);
  return [...hex].map((c) => String.fromCharCode(97 + parseInt(c, 16))).join('');
}

function manifestKey() {
  const file = path.join(__dirname, 'key.txt');
  if (!fs.existsSync(file)) {
    throw new Error(`${file} is missing: it holds the public key that fixes the extension ID to ${EXTENSION_ID}`);
  }
  const key = fs.readFileSync(file, 'utf8').trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(key)) throw new Error(`${file} is not one line of base64`);
  const id = extensionId(key);
  if (id !== EXTENSION_ID) throw new Error(`${file} gives extension ID ${id}, not ${EXTENSION_ID}`);
  return key;
}

function version() {
  return JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).version;
}

// Keys Chromium reads that Firefox does not (web-ext lint warns about each), and the permission only Chromium needs.
const CHROMIUM_ONLY = ['key', 'minimum_chrome_version', 'externally_connectable'];

/** The manifest for one browser, from static/manifest.json (written for Chromium) and the version. */
function manifestFor(browser, base, key) {
  const m = { ...base, version: version() };
  if (browser === 'chromium') return { ...m, key };
  for (const k of CHROMIUM_ONLY) delete m[k];
  // An event page: Firefox runs no extension service workers. It loads the same background.js.
  m.background = { scripts: [base.background.service_worker] };
  m.browser_specific_settings = {
    gecko: {
      id: FIREFOX_ID,
      strict_min_version: FIREFOX_MIN_VERSION,
      // MPSurf sends nothing about the user to its developers or anyone else: the host and its log stay on the
      // machine, and the proxy, when set, is the user's own.
      data_collection_permissions: { required: ['none'] },
    },
  };
  return m;
}

function config(browser, { key, production }) {
  return {
    name: browser,
    mode: production ? 'production' : 'development',
    context: __dirname,
    target: ['web', 'es2022'],
    entry: {
      background: './src/background.ts',
      popup: './src/popup.ts',
      options: './src/options.ts',
      content: './src/content.ts',
      'downloads-ui': './src/downloads-ui.ts',
      welcome: './src/welcome.ts',
    },
    output: {
      path: outDirs[browser],
      filename: '[name].js',
      clean: true,
    },
    // MV3's content security policy forbids eval, so no eval-based source maps.
    devtool: 'source-map',
    optimization: {
      // Readable output: it is small, and it is what reviewers and the DevTools see.
      minimize: false,
      splitChunks: false,
      runtimeChunk: false,
    },
    performance: { hints: false },
    resolve: {
      extensions: ['.ts', '.js'],
    },
    module: {
      rules: [
        {
          test: /\.ts$/,
          loader: 'ts-loader',
          include: path.join(__dirname, 'src'),
          options: {
            configFile: path.join(__dirname, 'tsconfig.json'),
            // Report type errors of the bundled files only; tests are checked by `tsc -p extension`.
            onlyCompileBundledFiles: true,
            // The same files, checked once (in the Chromium build).
            transpileOnly: browser !== 'chromium',
          },
        },
      ],
    },
    plugins: [
      new CopyPlugin({
        patterns: [
          {
            from: 'static/manifest.json',
            to: 'manifest.json',
            transform: (content) => JSON.stringify(manifestFor(browser, JSON.parse(content.toString()), key), null, 2) + '\n',
          },
          { from: 'static/popup.html', to: 'popup.html' },
          { from: 'static/popup.css', to: 'popup.css' },
          { from: 'static/options.html', to: 'options.html' },
          { from: 'static/welcome.html', to: 'welcome.html' },
          { from: 'static/ui.css', to: 'ui.css' },
          { from: 'static/icons/*.png', to: 'icons/[name][ext]' },
        ],
      }),
    ],
  };
};

module.exports = (env, argv) => {
  const key = manifestKey();
  const production = (argv && argv.mode) !== 'development';
  return ['chromium', 'firefox'].map((browser) => config(browser, { key, production }));
};

// For extension/test/manifests.test.ts and scripts/package-extension.mjs.
Object.assign(module.exports, { FIREFOX_ID, EXTENSION_ID, outDirs, version, manifestFor, manifestKey, extensionId });

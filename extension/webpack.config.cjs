// Builds the unpacked MV3 extension into dist/extension/: background.js (service worker), popup.js, options.js, content.js, and the static
// files, with the manifest's "key" and "version" filled in. ts-loader type-checks while it compiles.
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const CopyPlugin = require('copy-webpack-plugin');

const root = path.resolve(__dirname, '..');
const out = path.join(root, 'dist', 'extension');

// The ID the native host admits (PROTOCOL.md §1). Chrome derives it from the manifest key: the first 16 bytes of
// SHA-256 over the DER public key, each hex digit 0-f written as a-p.
const EXTENSION_ID = 'ajmpgeaaaphkhppijbmcemhafkpapbmh';

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

module.exports = (env, argv) => {
  const key = manifestKey();
  const production = (argv && argv.mode) !== 'development';
  return {
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
      path: out,
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
            transform: (content) => {
              const manifest = JSON.parse(content.toString());
              return JSON.stringify({ ...manifest, version: version(), key }, null, 2) + '\n';
            },
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

// Where the built artefacts live, relative to the repository root.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const dist = path.join(root, 'dist');
export const extensionDir = path.join(dist, 'extension');
// The same extension built for Firefox (extension/webpack.config.cjs): an event page and the fixed add-on ID.
export const firefoxExtensionDir = path.join(dist, 'extension-firefox');
export const hostBinary = path.join(dist, 'mpsurf-host');
// The privileged helper, a binary of its own (native-host/cmd/mpsurf-actuator).
export const actuatorBinary = path.join(dist, 'mpsurf-actuator');
export const vectorsDir = path.join(root, 'native-host', 'vectors');
export const chromiumPath = process.env.MPSURF_CHROMIUM || '/usr/bin/chromium';
// Debian's Firefox ESR (scripts/setup.sh installs it).
export const firefoxPath = process.env.MPSURF_FIREFOX || '/usr/bin/firefox-esr';
// Fixed by the manifest "key" (extension/key.txt); the host refuses any other caller.
export const extensionId = 'ajmpgeaaaphkhppijbmcemhafkpapbmh';
// Fixed by the Firefox manifest's browser_specific_settings.gecko.id; the host admits it as it admits extensionId.
export const firefoxAddonId = 'extension@mpsurf';

// Where the built artefacts live, relative to the repository root.
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const dist = path.join(root, 'dist');
export const extensionDir = path.join(dist, 'extension');
export const hostBinary = path.join(dist, 'mpsurf-host');
// The privileged helper, a binary of its own (native-host/cmd/mpsurf-actuator).
export const actuatorBinary = path.join(dist, 'mpsurf-actuator');
export const vectorsDir = path.join(root, 'native-host', 'vectors');
export const chromiumPath = process.env.MPSURF_CHROMIUM || '/usr/bin/chromium';
// Fixed by the manifest "key" (extension/key.txt); the host refuses any other caller.
export const extensionId = 'ajmpgeaaaphkhppijbmcemhafkpapbmh';

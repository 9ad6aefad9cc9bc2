// The testbed's names and addresses as e2e/topo/names.go defines them: names.json beside it is generated from that
// file (go test ./e2e/topo -run TestNamesFile -update) and checked against it by the same test.
import fs from 'node:fs';
import path from 'node:path';
import { root } from './paths.mjs';

export const TOPO = JSON.parse(fs.readFileSync(path.join(root, 'e2e', 'topo', 'names.json'), 'utf8'));

/** The network of addr with prefix length bits, as "a.b.c.d/bits" (IPv4). */
export function networkOf(addr, bits) {
  const n = addr.split('.').reduce((a, o) => (a << 8) | Number(o), 0) >>> 0;
  const masked = bits === 0 ? 0 : (n & (~0 << (32 - bits))) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (masked >>> s) & 255).join('.')}/${bits}`;
}

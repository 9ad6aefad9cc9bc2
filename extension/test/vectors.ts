// Reads the shared test vectors in native-host/vectors/ (PROTOCOL.md §8).
import fs from 'node:fs';

export function vectors<T>(name: string): T {
  return JSON.parse(fs.readFileSync(new URL(`../../native-host/vectors/${name}`, import.meta.url), 'utf8')) as T;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

export function unhex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'hex'));
}

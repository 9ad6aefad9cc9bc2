// The public structured-field test suite (httpwg/structured-field-tests, copied with its source and licence into
// native-host/vectors/structured-field-tests) run against structured-headers, the RFC 9651 library the extension
// builds and reads Multipath-Policy with (src/header.ts). e2e/origin/sfsuite_test.go runs the same files against the
// Go side's httpsfv. A case the library fails is listed under "ts" in known-failures.json with why; the test fails on
// any other failure and on a listed case that passes. JSON numbers do not tell 1 from 1.0, so an Integer and a
// Decimal of the same value compare equal after parsing here (the Go side tells them apart).
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DisplayString,
  Token,
  parseDictionary,
  parseItem,
  parseList,
  serializeDictionary,
  serializeItem,
  serializeList,
  type BareItem,
  type Dictionary,
  type InnerList,
  type Item,
  type List,
  type Parameters,
} from 'structured-headers';

const dir = new URL('../../native-host/vectors/structured-field-tests/', import.meta.url);

interface Case {
  name: string;
  raw?: string[];
  header_type: 'item' | 'list' | 'dictionary';
  expected?: unknown;
  must_fail?: boolean;
  can_fail?: boolean;
  canonical?: string[];
}

type JSONBare = number | string | boolean | { __type: string; value: string | number };

function readSuite(): Map<string, Case> {
  const cases = new Map<string, Case>();
  const files = [
    ...fs.readdirSync(dir).filter((f) => f.endsWith('.json') && f !== 'known-failures.json'),
    ...fs.readdirSync(new URL('serialisation-tests/', dir)).map((f) => `serialisation-tests/${f}`),
  ];
  for (const f of files) {
    for (const c of JSON.parse(fs.readFileSync(new URL(f, dir), 'utf8')) as Case[]) cases.set(`${f}: ${c.name}`, c);
  }
  return cases;
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32(bytes: Uint8Array): string {
  let out = '';
  for (let i = 0; i < bytes.length; i += 5) {
    const chunk = bytes.subarray(i, i + 5);
    let bits = 0n;
    for (let j = 0; j < 5; j++) bits = (bits << 8n) | BigInt(chunk[j] ?? 0);
    const chars = Math.ceil((chunk.length * 8) / 5);
    for (let j = 0; j < 8; j++) out += j < chars ? BASE32[Number((bits >> BigInt(35 - 5 * j)) & 31n)] : '=';
  }
  return out;
}

function unbase32(s: string): Uint8Array<ArrayBuffer> {
  let bits = 0n;
  let n = 0;
  const out: number[] = [];
  for (const ch of s.replace(/=+$/, '')) {
    const v = BASE32.indexOf(ch);
    if (v < 0) throw new Error(`not base32: ${s}`);
    bits = (bits << 5n) | BigInt(v);
    n += 5;
    if (n >= 8) {
      n -= 8;
      out.push(Number((bits >> BigInt(n)) & 255n));
    }
  }
  return new Uint8Array(out);
}

// What the library parsed, in the suite's JSON shape.
function bareToJSON(v: BareItem): JSONBare {
  if (v instanceof Token) return { __type: 'token', value: v.toString() };
  if (v instanceof DisplayString) return { __type: 'displaystring', value: v.toString() };
  if (v instanceof Date) return { __type: 'date', value: Math.floor(v.getTime() / 1000) };
  if (v instanceof ArrayBuffer) return { __type: 'binary', value: base32(new Uint8Array(v)) };
  return v as number | string | boolean;
}
const paramsToJSON = (p: Parameters) => [...p].map(([k, v]) => [k, bareToJSON(v)]);
const itemToJSON = (i: Item) => [bareToJSON(i[0]), paramsToJSON(i[1])];
const memberToJSON = (m: Item | InnerList) =>
  Array.isArray(m[0]) ? [(m as InnerList)[0].map(itemToJSON), paramsToJSON(m[1])] : itemToJSON(m as Item);

function toJSON(type: Case['header_type'], v: Item | List | Dictionary): unknown {
  if (type === 'item') return itemToJSON(v as Item);
  if (type === 'list') return (v as List).map(memberToJSON);
  return [...(v as Dictionary)].map(([k, m]) => [k, memberToJSON(m)]);
}

// The library's value of the suite's JSON, for serialising.
function bareFromJSON(v: JSONBare): BareItem {
  if (typeof v !== 'object') return v;
  if (v.__type === 'token') return new Token(String(v.value));
  if (v.__type === 'displaystring') return new DisplayString(String(v.value));
  if (v.__type === 'date') return new Date(Number(v.value) * 1000);
  if (v.__type === 'binary') return unbase32(String(v.value));
  throw new Error(`unknown __type ${v.__type}`);
}
const paramsFromJSON = (p: [string, JSONBare][]): Parameters => new Map(p.map(([k, v]) => [k, bareFromJSON(v)]));
const itemFromJSON = ([b, p]: [JSONBare, [string, JSONBare][]]): Item => [bareFromJSON(b), paramsFromJSON(p)];
function memberFromJSON(m: [unknown, [string, JSONBare][]]): Item | InnerList {
  if (Array.isArray(m[0])) return [(m[0] as [JSONBare, [string, JSONBare][]][]).map(itemFromJSON), paramsFromJSON(m[1])];
  return itemFromJSON(m as [JSONBare, [string, JSONBare][]]);
}

function fromJSON(type: Case['header_type'], v: unknown): Item | List | Dictionary {
  if (type === 'item') return itemFromJSON(v as [JSONBare, [string, JSONBare][]]);
  if (type === 'list') return (v as [unknown, [string, JSONBare][]][]).map(memberFromJSON);
  return new Map((v as [string, [unknown, [string, JSONBare][]]][]).map(([k, m]) => [k, memberFromJSON(m)]));
}

const parse = { item: parseItem, list: parseList, dictionary: parseDictionary };

function serialize(type: Case['header_type'], v: Item | List | Dictionary): string {
  if (type === 'item') return serializeItem(v as Item);
  if (type === 'list') return serializeList(v as List);
  return serializeDictionary(v as Dictionary);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

// Why the case fails with this library, or '' when it passes.
function run(c: Case): string {
  let value: Item | List | Dictionary | undefined;
  if (c.raw) {
    let parsed: Item | List | Dictionary;
    try {
      // RFC 9651 §4.2: several field lines are one value joined with ", ".
      parsed = parse[c.header_type](c.raw.join(', '));
    } catch (err) {
      if (c.must_fail || c.can_fail) return '';
      return `parse: ${(err as Error).message}`;
    }
    if (c.must_fail) return 'parsed, must fail';
    const got = toJSON(c.header_type, parsed);
    if (!same(got, c.expected)) return `parsed ${JSON.stringify(got)}, want ${JSON.stringify(c.expected)}`;
    value = parsed;
  }
  const want = c.canonical ? (c.canonical[0] ?? '') : (c.raw?.[0] ?? '');
  let out: string;
  try {
    // The library checks some values as they are made (a Token's characters): that is its serialiser refusing.
    out = serialize(c.header_type, value ?? fromJSON(c.header_type, c.expected));
  } catch (err) {
    if (c.must_fail) return '';
    return `serialise: ${(err as Error).message}`;
  }
  if (c.must_fail) return `serialised as ${JSON.stringify(out)}, must fail`;
  return out === want ? '' : `serialised as ${JSON.stringify(out)}, want ${JSON.stringify(want)}`;
}

describe('structured-field-tests against structured-headers', () => {
  const cases = readSuite();
  const known = (JSON.parse(fs.readFileSync(new URL('known-failures.json', dir), 'utf8')) as Record<string, Record<string, string>>).ts ?? {};

  it('reads the whole suite', () => {
    expect(cases.size).toBeGreaterThan(1000);
    for (const name of Object.keys(known)) expect(cases.has(name), `known-failures.json lists ${name}`).toBe(true);
  });

  it('passes every case but the known failures, and each known failure still fails', () => {
    const unexpected: string[] = [];
    const stale: string[] = [];
    for (const [name, c] of cases) {
      const why = run(c);
      if (why && !(name in known)) unexpected.push(`${name}: ${why}`);
      if (!why && name in known) stale.push(name);
    }
    expect(unexpected).toEqual([]);
    expect(stale).toEqual([]);
  });
});

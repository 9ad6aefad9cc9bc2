import { describe, expect, it } from 'vitest';
import { parseDictionary, serializeDictionary } from 'structured-headers';
import {
  HeaderError,
  headerValue,
  parseHeader,
  quantise,
  quantiseDeadline,
  quantiseTheta1,
  quantiseTheta2,
  type HeaderSource,
} from '../src/header';
import { vectors } from './vectors';

interface HeaderCase {
  name: string;
  policy: HeaderSource;
  header: string;
}
const { cases } = vectors<{ cases: HeaderCase[] }>('header.json');

describe('Multipath-Policy vectors (header.json)', () => {
  it('has cases to check', () => {
    expect(cases.length).toBeGreaterThanOrEqual(10);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: serialises exactly', (_, c) => {
    expect(headerValue(c.policy)).toBe(c.header);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: parses back to the quantised values', (_, c) => {
    expect(parseHeader(c.header)).toEqual(quantise(c.policy));
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s: is already in RFC 9651 canonical form', (_, c) => {
    expect(serializeDictionary(parseDictionary(c.header))).toBe(c.header);
  });

  it('reads the non-canonical mp=?1 the same as the bare key', () => {
    expect(parseHeader('v=1, mp=?1, t1=256, dl=3')).toEqual(parseHeader('v=1, mp, t1=256, dl=3'));
  });
});

describe('quantisation (PROTOCOL.md §7)', () => {
  it('t1: 0 stays 0, the rest goes to the nearest power of two on a log scale', () => {
    expect(quantiseTheta1(0)).toBe(0);
    expect(quantiseTheta1(1)).toBe(1);
    expect(quantiseTheta1(1024)).toBe(1);
    expect(quantiseTheta1(1024 * 1024)).toBe(1024);
    // 2^(7.5) KiB = 185363.8 B is the boundary between 128 and 256 KiB; halves round up.
    expect(quantiseTheta1(185_363)).toBe(128);
    expect(quantiseTheta1(185_364)).toBe(256);
    expect(quantiseTheta1(2 ** 40)).toBe(2 ** 20);
  });

  it('t1: every power of two maps to itself and its neighbours round the right way', () => {
    for (let k = 0; k <= 20; k++) {
      const b = 1024 * 2 ** k;
      expect(quantiseTheta1(b)).toBe(2 ** k);
      expect(quantiseTheta1(b + 1)).toBe(2 ** k);
      if (k > 0) expect(quantiseTheta1(b - 1)).toBe(2 ** k);
    }
  });

  it('t2: null is no cap, below 1 KiB is 0, otherwise rounded down, never up', () => {
    expect(quantiseTheta2(null)).toBeNull();
    expect(quantiseTheta2(0)).toBe(0);
    expect(quantiseTheta2(1023)).toBe(0);
    expect(quantiseTheta2(1024)).toBe(1);
    expect(quantiseTheta2(2047)).toBe(1);
    expect(quantiseTheta2(2 ** 20 - 1)).toBe(512);
    expect(quantiseTheta2(2 ** 34)).toBe(2 ** 24);
    for (let x = 1024; x < 2 ** 26; x = Math.floor(x * 1.37) + 1) {
      expect(quantiseTheta2(x)! * 1024).toBeLessThanOrEqual(x);
    }
  });

  it('dl: nearest second, halves up, within 1 … 60', () => {
    expect(quantiseDeadline(0)).toBe(1);
    expect(quantiseDeadline(1499)).toBe(1);
    expect(quantiseDeadline(1500)).toBe(2);
    expect(quantiseDeadline(59_499)).toBe(59);
    expect(quantiseDeadline(60_000)).toBe(60);
    expect(quantiseDeadline(3_600_000)).toBe(60);
  });

  it('refuses values that are not byte counts', () => {
    expect(() => quantiseTheta1(-1)).toThrow(RangeError);
    expect(() => quantiseTheta1(1.5)).toThrow(RangeError);
    expect(() => quantiseTheta2(Number.NaN)).toThrow(RangeError);
    expect(() => quantiseDeadline(-5)).toThrow(RangeError);
  });
});

describe('parseHeader', () => {
  it('ignores keys it does not know and accepts the canonical boolean form', () => {
    expect(parseHeader('v=1, mp, t1=256, dl=3, future=?0, x="y"')).toEqual({ v: 1, mp: true, t1: 256, t2: null, dl: 3 });
  });

  it.each([
    ['not a dictionary', 'v=1, mp=?1, t1=(1 2'],
    ['another version', 'v=2, mp=?1, t1=256, dl=3'],
    ['mp missing', 'v=1, t1=256, dl=3'],
    ['mp not a boolean', 'v=1, mp=1, t1=256, dl=3'],
    ['t1 a decimal', 'v=1, mp=?1, t1=2.5, dl=3'],
    ['t1 too large', 'v=1, mp=?1, t1=2097152, dl=3'],
    ['dl zero', 'v=1, mp=?1, t1=256, dl=0'],
    ['t2 an inner list', 'v=1, mp=?1, t1=256, t2=(1 2), dl=3'],
  ])('rejects %s', (_, value) => {
    expect(() => parseHeader(value)).toThrow(HeaderError);
  });
});

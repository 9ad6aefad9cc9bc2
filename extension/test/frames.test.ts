import { describe, expect, it } from 'vitest';
import { decideRequest } from '../src/protocol/decide';
import { ErrorCode } from '../src/protocol/envelope';
import { MAX_REQUEST_FRAME, decodeFrame, encodeFrame } from '../src/protocol/frames';
import { helloRequest, statusRequest } from '../src/protocol/status';
import { hex, unhex, vectors } from './vectors';

interface FrameCase {
  name: string;
  json: string;
  hex: string;
}
const { frames } = vectors<{ frames: FrameCase[] }>('frames.json');

interface BadInputCase {
  name: string;
  input_hex: string;
  replies: number[];
}
const badInput = vectors<{ cases: BadInputCase[] }>('bad_input.json').cases;

describe('frames.json', () => {
  it.each(frames.map((f) => [f.name, f] as const))('%s: encodes to the exact bytes', (_, f) => {
    expect(hex(encodeFrame(f.json))).toBe(f.hex);
    // The same bytes from the parsed message: JSON.stringify keeps the vectors' key order and spacing.
    expect(hex(encodeFrame(JSON.parse(f.json) as object))).toBe(f.hex);
  });

  it.each(frames.map((f) => [f.name, f] as const))('%s: decodes back to the JSON', (_, f) => {
    const bytes = unhex(f.hex);
    const got = decodeFrame(bytes);
    expect(got).toEqual({ ok: true, message: JSON.parse(f.json), used: bytes.length });
  });

  it('the request builders produce the vectors byte for byte', () => {
    const byName = (n: string) => frames.find((f) => f.name === n)!.hex;
    expect(hex(encodeFrame(helloRequest(1, '0.1.0')))).toBe(byName('hello request'));
    expect(hex(encodeFrame(decideRequest(2, { origin: 'https://example.com', tab: 12, nav: '12-1' })))).toBe(
      byName('decide request'),
    );
    expect(hex(encodeFrame(statusRequest(3)))).toBe(byName('status request without body'));
    expect(hex(encodeFrame(decideRequest(4, { origin: 'https://bücher.example', tab: 1, nav: '1-1' })))).toBe(
      byName('non-ASCII origin in UTF-8'),
    );
  });

  it('reads a frame that is followed by more bytes, and says how many it used', () => {
    const a = encodeFrame({ v: 1, id: 1, type: 'status' });
    const both = new Uint8Array([...a, ...encodeFrame({ v: 1, id: 2, type: 'status' })]);
    const first = decodeFrame(both);
    expect(first).toMatchObject({ ok: true, used: a.length, message: { id: 1 } });
    expect(decodeFrame(both.subarray(a.length))).toMatchObject({ ok: true, message: { id: 2 } });
  });

  it('refuses to encode what the other side would refuse', () => {
    expect(() => encodeFrame('')).toThrow(RangeError);
    expect(() => encodeFrame('x'.repeat(MAX_REQUEST_FRAME + 1), MAX_REQUEST_FRAME)).toThrow(/exceed/);
  });

  it('applies the cap before looking at the payload', () => {
    const big = new Uint8Array([0x01, 0x00, 0x10, 0x00]); // 1 MiB + 1, no payload
    expect(decodeFrame(big)).toEqual({ ok: false, code: ErrorCode.FrameTooLarge, used: 4, fatal: true });
  });
});

// The host's reading rules (PROTOCOL.md §1) applied by the TypeScript decoder with the host's 64 KiB cap: every
// framing-level error the host replies with (codes 2 to 5) must come out of decodeFrame in the same order, and every
// frame the host answers past the framing layer (ok, or codes 6 to 9) must decode to a JSON object.
describe('bad_input.json through decodeFrame', () => {
  const framing = new Set<number>([ErrorCode.BadFrame, ErrorCode.FrameTooLarge, ErrorCode.BadJSON, ErrorCode.BadUTF8]);

  it.each(badInput.map((c) => [c.name, c] as const))('%s', (_, c) => {
    let rest = unhex(c.input_hex);
    const seen: (number | 'decoded')[] = [];
    while (rest.length > 0) {
      const r = decodeFrame(rest, MAX_REQUEST_FRAME);
      if (r.ok) seen.push('decoded');
      else if (r.code !== 'truncated') seen.push(r.code);
      if (!r.ok && r.fatal) break;
      rest = rest.subarray(r.used);
    }
    expect(seen).toEqual(c.replies.map((code) => (framing.has(code) ? code : 'decoded')));
  });
});

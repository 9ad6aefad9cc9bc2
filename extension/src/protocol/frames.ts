// Framing (PROTOCOL.md §1). Chrome frames the extension's messages itself; these exist so the tests can prove the
// byte-level agreement with the Go host against vectors/frames.json and vectors/bad_input.json.

import { ErrorCode, type ErrorCodeValue } from './envelope';
import { encoder, object, string } from './fields';

/** Host → browser frames: Chrome closes the port on anything larger (PROTOCOL.md §1). */
export const MAX_HOST_FRAME = 1_048_576;

/** Browser → host frames: the host's own input cap (PROTOCOL.md §1). */
export const MAX_REQUEST_FRAME = 65_536;

export type FrameResult =
  | { ok: true; message: Record<string, unknown>; used: number }
  /** `code` is a §6 error code; `fatal` means the stream cannot be read past this point. */
  | { ok: false; code: ErrorCodeValue; used: number; fatal: boolean }
  | { ok: false; code: 'truncated'; used: number; fatal: true };

/** A 4-byte little-endian length followed by the UTF-8 JSON. */
export function encodeFrame(message: object | string, cap = MAX_HOST_FRAME): Uint8Array {
  const json = typeof message === 'string' ? message : JSON.stringify(message);
  const payload = encoder.encode(json);
  if (payload.length === 0) throw new RangeError('frame: empty payload');
  if (payload.length > cap) throw new RangeError(`frame: ${payload.length} bytes exceed the ${cap}-byte cap`);
  const out = new Uint8Array(4 + payload.length);
  new DataView(out.buffer).setUint32(0, payload.length, true);
  out.set(payload, 4);
  return out;
}

/** Reads the frame at the start of `bytes`, judging it the way PROTOCOL.md §1 says the host judges its input. */
export function decodeFrame(bytes: Uint8Array, cap = MAX_HOST_FRAME): FrameResult {
  if (bytes.length < 4) return { ok: false, code: 'truncated', used: bytes.length, fatal: true };
  const length = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
  if (length === 0) return { ok: false, code: ErrorCode.BadFrame, used: 4, fatal: false };
  if (length > cap) return { ok: false, code: ErrorCode.FrameTooLarge, used: 4, fatal: true };
  if (bytes.length < 4 + length) return { ok: false, code: 'truncated', used: bytes.length, fatal: true };
  const used = 4 + length;
  let json: string;
  try {
    json = new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(4, used));
  } catch {
    return { ok: false, code: ErrorCode.BadUTF8, used, fatal: false };
  }
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { ok: false, code: ErrorCode.BadJSON, used, fatal: false };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, code: ErrorCode.BadJSON, used, fatal: false };
  }
  return { ok: true, message: value as Record<string, unknown>, used };
}

// Field checks for what the host sends: each throws ProtocolError naming the field.

import { ProtocolError } from './envelope';

export const encoder = new TextEncoder();

export function object(v: unknown, path: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ProtocolError(`${path}: expected an object, got ${show(v)}`);
  return v as Record<string, unknown>;
}

export function int(v: unknown, path: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new ProtocolError(`${path}: expected an integer, got ${show(v)}`);
  if (v < min || v > max) throw new ProtocolError(`${path}: ${v} is outside ${min} … ${max}`);
  return v;
}

/** A finite number or null (absent counts as null: the host did not measure it). */
export function num(v: unknown, path: string): number | null {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new ProtocolError(`${path}: expected a number or null, got ${show(v)}`);
  return v;
}

export function oneOf<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) {
    throw new ProtocolError(`${path}: expected one of ${allowed.join(', ')}, got ${show(v)}`);
  }
  return v as T;
}

export function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') throw new ProtocolError(`${path}: expected a boolean, got ${show(v)}`);
  return v;
}

export function string(v: unknown, path: string, maxBytes: number): string {
  if (typeof v !== 'string') throw new ProtocolError(`${path}: expected a string, got ${show(v)}`);
  if (utf8Length(v) > maxBytes) throw new ProtocolError(`${path}: longer than ${maxBytes} bytes`);
  return v;
}

export function utf8Length(s: string): number {
  return encoder.encode(s).length;
}

export function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

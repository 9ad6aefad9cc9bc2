// What the extension reports and keeps in the host's store (PROTOCOL.md §4 Report, Prefs, Log export): page loads,
// preferences, the decision log's export and deletion.

import { checkPath, decideRequest } from './decide';
import { checkId, ProtocolError, type Request } from './envelope';
import { bool, int, object, show, string, utf8Length } from './fields';

/** A finished main-frame load (PROTOCOL.md §4 Report). */
export interface Report {
  origin: string;
  tab: number;
  nav: string;
  protocol: string;
  transfer_bytes: number;
  plt_ms: number;
  multipath: boolean | null;
  /** The page's URL path (never its query or fragment), so the host learns sizes per page, not per site. */
  path?: string;
  /** Objects the page loaded and new connections it opened to its own origin (Resource Timing). */
  objects?: number;
  conns?: number;
}

export interface LogChunk {
  format: string;
  data: string;
  rows: number;
  cursor: string | null;
}

export function reportRequest(id: number, r: Report): Request {
  checkId(id);
  decideRequest(id, { origin: r.origin, tab: r.tab, nav: r.nav });
  if (typeof r.protocol !== 'string' || utf8Length(r.protocol) > 16) throw new RangeError('report: protocol longer than 16 bytes');
  if (!Number.isSafeInteger(r.transfer_bytes) || r.transfer_bytes < 0 || r.transfer_bytes > 2 ** 40) {
    throw new RangeError(`report: transfer_bytes ${r.transfer_bytes} is outside 0 … 2^40`);
  }
  if (!Number.isFinite(r.plt_ms) || r.plt_ms < 0 || r.plt_ms > 600_000) throw new RangeError(`report: plt_ms ${r.plt_ms} is outside 0 … 600000`);
  if (r.multipath !== null && typeof r.multipath !== 'boolean') throw new RangeError('report: multipath must be a boolean or null');
  checkPath(r.path, 'report');
  for (const k of ['objects', 'conns'] as const) {
    const v = r[k];
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0 || v > 100_000)) throw new RangeError(`report: ${k} ${v} is outside 0 … 100000`);
  }
  const { origin, tab, nav, protocol, transfer_bytes, plt_ms, multipath } = r;
  const body: Record<string, unknown> = { origin, tab, nav, protocol, transfer_bytes, plt_ms, multipath };
  if (r.path !== undefined) body.path = r.path;
  if (r.objects !== undefined) body.objects = r.objects;
  if (r.conns !== undefined) body.conns = r.conns;
  return { v: 1, id, type: 'report', body };
}

/** `prefs` must already be normalised (prefs.ts); the builder only wraps it. */
export function prefsRequest(id: number, prefs: object): Request {
  checkId(id);
  return { v: 1, id, type: 'prefs', body: { ...prefs } };
}

export function logExportRequest(id: number, format: 'csv' | 'jsonl', cursor: string | null, sinceMs?: number): Request {
  checkId(id);
  const body: Record<string, unknown> = { format };
  if (sinceMs !== undefined) body.since_ms = sinceMs;
  if (cursor !== null) body.cursor = cursor;
  return { v: 1, id, type: 'log_export', body };
}

export function logDeleteRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'log_delete' };
}

export function parseLogChunk(body: unknown): LogChunk {
  const b = object(body, 'log_export');
  return {
    format: string(b.format, 'log_export.format', 16),
    data: string(b.data, 'log_export.data', 512 * 1024),
    rows: int(b.rows, 'log_export.rows', 0, Number.MAX_SAFE_INTEGER),
    cursor: b.cursor === null || b.cursor === undefined ? null : string(b.cursor, 'log_export.cursor', 1024),
  };
}

export function parsePrefsReply(body: unknown): Record<string, unknown> {
  const b = object(body, 'prefs');
  if (b.applied !== true) throw new ProtocolError(`prefs.applied: expected true, got ${show(b.applied)}`);
  return object(b.prefs, 'prefs.prefs');
}

export function parseReportReply(body: unknown): { stored: boolean; samples: number } {
  const b = object(body, 'report');
  return { stored: bool(b.stored, 'report.stored'), samples: int(b.samples, 'report.samples', 0, Number.MAX_SAFE_INTEGER) };
}

// Downloads (PROTOCOL.md §4 Downloads): offers checked against the host's limits before sending, control and list
// requests, and the states the host pushes.

import { MAX_REASON_BYTES, normaliseOrigin } from './decide';
import { checkId, ProtocolError, type Request, type RequestType } from './envelope';
import { bool, int, object, oneOf, string, utf8Length } from './fields';

export type DownloadRequestType = Extract<RequestType, 'download_offer' | 'download_control' | 'download_list'>;

/** The request headers a download may carry to the host, for that download only. */
export interface DownloadHeaders {
  cookie?: string;
  authorization?: string;
  referer?: string;
  'user-agent'?: string;
}

export interface DownloadOffer {
  id: string;
  url: string;
  origin: string;
  size: number;
  file: string;
  protocol?: 'h2' | 'http/1.1' | '';
  resume?: boolean;
  headers?: DownloadHeaders;
}

export const DOWNLOAD_STATES = ['declined', 'starting', 'running', 'paused', 'done', 'failed', 'canceled'] as const;

export type DownloadStateName = (typeof DOWNLOAD_STATES)[number];

export interface DownloadState {
  id: string;
  state: DownloadStateName;
  url: string;
  file: string;
  size: number;
  received: number;
  paths: { name: string; kind: string; bytes: number }[];
  multipath: boolean;
  reason: string;
  digest?: string;
  elapsed_ms: number;
}

const DOWNLOAD_HEADER_LIMITS: Record<keyof DownloadHeaders, number> = { cookie: 16_384, authorization: 8_192, referer: 8_192, 'user-agent': 512 };

/** Why the host would refuse this offer (the limits of PROTOCOL.md §4 Downloads), or null: checked before sending. */
export function offerProblem(o: DownloadOffer): string | null {
  if (typeof o.id !== 'string' || o.id.length < 1 || utf8Length(o.id) > 64) return 'id: 1 … 64 bytes';
  let u: URL;
  try {
    u = new URL(o.url);
  } catch {
    return 'url: not a URL';
  }
  if (u.protocol !== 'https:' || u.username !== '' || u.password !== '' || utf8Length(o.url) > 8_192) return 'url: not an https URL without credentials';
  const origin = normaliseOrigin(o.origin);
  if (origin === null) return 'origin: not an http(s) origin';
  if (origin !== u.origin) return 'origin: not the URL\'s origin';
  if (!Number.isSafeInteger(o.size) || o.size < 1 || o.size > 2 ** 50) return 'size: 1 … 2^50';
  if (typeof o.file !== 'string' || !o.file.startsWith('/') || utf8Length(o.file) > 4_096 || /(^|\/)\.\.?(\/|$)|\/\/|\0/.test(o.file) || (o.file.length > 1 && o.file.endsWith('/'))) {
    return 'file: not a clean absolute path';
  }
  if (o.protocol !== undefined && !['h2', 'http/1.1', ''].includes(o.protocol)) return 'protocol: h2, http/1.1 or ""';
  for (const [k, v] of Object.entries(o.headers ?? {})) {
    const lim = DOWNLOAD_HEADER_LIMITS[k as keyof DownloadHeaders];
    if (lim === undefined) return `headers.${k}: not one of cookie, authorization, referer, user-agent`;
    if (typeof v !== 'string' || utf8Length(v) > lim) return `headers.${k}: at most ${lim} bytes`;
    if (/[\r\n\0]/.test(v)) return `headers.${k}: control characters`;
  }
  return null;
}

export function downloadOfferRequest(id: number, o: DownloadOffer): Request {
  checkId(id);
  const why = offerProblem(o);
  if (why !== null) throw new RangeError(why);
  return { v: 1, id, type: 'download_offer', body: { ...o } };
}

export function downloadControlRequest(id: number, download: string, action: 'pause' | 'resume' | 'cancel'): Request {
  checkId(id);
  return { v: 1, id, type: 'download_control', body: { id: download, action } };
}

export function downloadDiscardRequest(id: number, file: string): Request {
  checkId(id);
  return { v: 1, id, type: 'download_control', body: { action: 'discard', file } };
}

export function downloadListRequest(id: number): Request {
  checkId(id);
  return { v: 1, id, type: 'download_list' };
}

export function parseDownloadState(body: unknown): DownloadState {
  const b = object(body, 'download');
  const size = int(b.size, 'download.size', 0, 2 ** 50);
  const paths = b.paths ?? [];
  if (!Array.isArray(paths) || paths.length > 8) throw new ProtocolError('download.paths: expected an array of at most 8');
  const st: DownloadState = {
    id: string(b.id, 'download.id', 64),
    state: oneOf(b.state, 'download.state', DOWNLOAD_STATES),
    url: string(b.url, 'download.url', 8_192),
    file: string(b.file, 'download.file', 4_096),
    size,
    received: int(b.received, 'download.received', 0, size),
    paths: paths.map((x, i) => {
      const p = object(x, `download.paths[${i}]`);
      return { name: string(p.name, `download.paths[${i}].name`, 64), kind: string(p.kind ?? '', `download.paths[${i}].kind`, 16), bytes: int(p.bytes, `download.paths[${i}].bytes`, 0, 2 ** 50) };
    }),
    multipath: bool(b.multipath, 'download.multipath'),
    reason: string(b.reason ?? '', 'download.reason', MAX_REASON_BYTES),
    elapsed_ms: int(b.elapsed_ms ?? 0, 'download.elapsed_ms', 0, Number.MAX_SAFE_INTEGER),
  };
  if (b.digest !== undefined && b.digest !== null) st.digest = string(b.digest, 'download.digest', 64);
  return st;
}

export function parseDownloadList(body: unknown): DownloadState[] {
  const b = object(body, 'download_list');
  if (!Array.isArray(b.downloads) || b.downloads.length > 1_000) throw new ProtocolError('download_list.downloads: expected an array');
  return b.downloads.map(parseDownloadState);
}

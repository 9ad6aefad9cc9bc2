// A page's third parties (PROTOCOL.md §4 Peers) and announced sizes (§4 Announce): the requests and their replies.

import { decideRequest } from './decide';
import { checkId, ProtocolError, type Request } from './envelope';
import { bool, int, object, string, utf8Length } from './fields';

/** A host a page's requests reached and the address the browser used for it (PROTOCOL.md §4 Peers). */
export interface Peer {
  host: string;
  ip: string;
}

/** At most this many peers per `peers` request (PROTOCOL.md §4). */
export const MAX_PEERS = 64;

export function peersRequest(id: number, origin: string, tab: number, peers: Peer[]): Request {
  checkId(id);
  decideRequest(id, { origin, tab, nav: 'peers' });
  if (!Array.isArray(peers) || peers.length < 1 || peers.length > MAX_PEERS) throw new RangeError(`peers: must list 1 … ${MAX_PEERS}`);
  for (const p of peers) {
    if (typeof p.host !== 'string' || p.host.length === 0 || utf8Length(p.host) > 255) throw new RangeError('peers: host must be 1 … 255 bytes');
    if (typeof p.ip !== 'string' || !/^\[?[0-9A-Fa-f:.]{2,45}\]?$/.test(p.ip)) throw new RangeError(`peers: ${p.ip} is not an IP address`);
  }
  return { v: 1, id, type: 'peers', body: { origin, tab, peers: peers.map(({ host, ip }) => ({ host, ip })) } };
}

/** The largest announced byte count a request may carry (PROTOCOL.md §4 Announce): 2^40, as transfer_bytes. */
export const MAX_ANNOUNCED = 2 ** 40;

/** Announce: the page's responses have announced (Content-Length) at least `bytes` bytes (PROTOCOL.md §4 Announce). */
export function announceRequest(id: number, origin: string, tab: number, nav: string, bytes: number): Request {
  checkId(id);
  decideRequest(id, { origin, tab, nav });
  if (!Number.isSafeInteger(bytes) || bytes < 0 || bytes > MAX_ANNOUNCED) throw new RangeError(`announce: bytes ${bytes} is outside 0 … 2^40`);
  return { v: 1, id, type: 'announce', body: { origin, tab, nav, bytes } };
}

/** A reported peer the host did not put under the page's decision, and why (PROTOCOL.md §4 Peers). */
export interface PeerRefusal {
  host: string;
  ip: string;
  why: string;
}

export function parsePeersReply(body: unknown): { addrs: number; refused: PeerRefusal[]; actuation: string } {
  const b = object(body, 'peers');
  const refused: PeerRefusal[] = [];
  if (b.refused !== undefined) {
    if (!Array.isArray(b.refused) || b.refused.length > MAX_PEERS) throw new ProtocolError(`peers.refused: an array of at most ${MAX_PEERS}`);
    b.refused.forEach((r: unknown, i: number) => {
      const o = object(r, `peers.refused[${i}]`);
      refused.push({ host: string(o.host, `peers.refused[${i}].host`, 255), ip: string(o.ip, `peers.refused[${i}].ip`, 64), why: string(o.why, `peers.refused[${i}].why`, 512) });
    });
  }
  return { addrs: int(b.addrs, 'peers.addrs', 0, MAX_PEERS), refused, actuation: string(b.actuation, 'peers.actuation', 256) };
}

export interface AnnounceReply {
  joined: boolean;
  why: string;
  actuation: string;
  /** Tunnels through the user's MPTCP proxy told to join now. */
  tunnels: number;
}

export function parseAnnounceReply(body: unknown): AnnounceReply {
  const b = object(body, 'announce');
  const why = b.why === undefined ? '' : string(b.why, 'announce.why', 512);
  const tunnels = b.tunnels === undefined ? 0 : int(b.tunnels, 'announce.tunnels', 0, 64);
  return { joined: bool(b.joined, 'announce.joined'), why, actuation: string(b.actuation, 'announce.actuation', 256), tunnels };
}

// Pausing multipath (PROTOCOL.md §4 Pause): the request and its reply.

import { checkId, type Request } from './envelope';
import { bool, object, oneOf } from './fields';

/** Why multipath is paused, or 'none': as the host names them (checked against native-host/vectors/names.json). */
export const PAUSE_REASONS = ['user', 'consent', 'cap_daily', 'cap_monthly', 'roaming', 'none'] as const;
export type PauseWhy = (typeof PAUSE_REASONS)[number];

export function pauseRequest(id: number, paused: boolean, why: PauseWhy): Request {
  checkId(id);
  if (!PAUSE_REASONS.includes(why) || paused === (why === 'none')) throw new RangeError(`pause: ${why} does not go with paused ${paused}`);
  return { v: 1, id, type: 'pause', body: { paused, why } };
}

export function parsePauseReply(body: unknown): { paused: boolean; why: PauseWhy } {
  const b = object(body, 'pause');
  return { paused: bool(b.paused, 'pause.paused'), why: oneOf(b.why, 'pause.why', PAUSE_REASONS) };
}

// Pausing multipath (PROTOCOL.md §4 Pause): the request and its reply.

import { checkId, type Request } from './envelope';
import { bool, object, oneOf } from './fields';

export type PauseWhy = 'user' | 'consent' | 'cap_daily' | 'cap_monthly' | 'roaming' | 'none';

export const PAUSE_REASONS: readonly PauseWhy[] = ['user', 'consent', 'cap_daily', 'cap_monthly', 'roaming', 'none'];

export function pauseRequest(id: number, paused: boolean, why: PauseWhy): Request {
  checkId(id);
  if (!PAUSE_REASONS.includes(why) || paused === (why === 'none')) throw new RangeError(`pause: ${why} does not go with paused ${paused}`);
  return { v: 1, id, type: 'pause', body: { paused, why } };
}

export function parsePauseReply(body: unknown): { paused: boolean; why: PauseWhy } {
  const b = object(body, 'pause');
  return { paused: bool(b.paused, 'pause.paused'), why: oneOf(b.why, 'pause.why', PAUSE_REASONS) };
}

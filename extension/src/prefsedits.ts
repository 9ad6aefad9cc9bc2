// The options page's preference changes, in order. The page holds no preferences until the service worker has
// answered its first question, and that answer waits for the host's status (up to a second, longer on a loaded
// machine); a change made before it, or while an earlier change is still on its way, must neither be dropped nor
// be sent on top of preferences older than the previous change. So every change waits for the page to have read the
// preferences and for every earlier change, then goes out on top of what the last answer held: the user's changes
// apply in the order made, the last one wins.

import { normalisePrefs, type Prefs } from './prefs';

export interface PrefsEditsDeps {
  /** The preferences the page holds now (from the service worker's last answer), null before the first. */
  current(): Prefs | null;
  /** Sends the whole preferences to the service worker; resolves once its answer is shown (current() then holds it). */
  store(next: Prefs): Promise<void>;
}

export class PrefsEdits {
  private tail: Promise<unknown>;

  /** loaded: the page's first read of the preferences; it may fail (then every change fails in words). */
  constructor(
    loaded: Promise<unknown>,
    private readonly d: PrefsEditsDeps,
  ) {
    this.tail = loaded.catch(() => undefined);
  }

  /**
   * Applies change after every earlier one; a function computes it from the preferences as they are then (a list
   * such as the site rules is edited on top of the earlier edits, not of what the page showed when asked). Rejects with a PrefsError (nothing sent) when the result is invalid,
   * with an Error when the preferences could not be read or the service worker refused; a failed change does not
   * hold up the next one.
   */
  save(change: Partial<Prefs> | ((prefs: Prefs) => Partial<Prefs>)): Promise<void> {
    const job = this.tail.then(async () => {
      const prefs = this.d.current();
      if (prefs === null) throw new Error('the page could not read the settings; reopen it');
      const next = { ...prefs, ...(typeof change === 'function' ? change(prefs) : change) };
      normalisePrefs(next);
      await this.d.store(next);
    });
    this.tail = job.catch(() => undefined);
    return job;
  }
}

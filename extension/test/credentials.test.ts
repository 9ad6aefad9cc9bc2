import { describe, expect, it } from 'vitest';
import { Credentials } from '../src/downloads';

// The Authorization header a download behind HTTP authentication needs: held only while handing downloads over is
// on, only for a minute, and handed out once, for the download's own URL.
describe('Credentials', () => {
  it('holds nothing while downloads are off', () => {
    const c = new Credentials();
    c.seen('https://files.example/big.iso', 'Basic YTpi', 0);
    expect(c.take('https://files.example/big.iso', 1)).toBeUndefined();
    expect(c.size()).toBe(0);
  });

  it('gives a header once, for that URL only, within a minute', () => {
    const c = new Credentials();
    c.enable(true);
    c.seen('https://files.example/big.iso', 'Basic YTpi', 0);
    c.seen('https://files.example/other', 'Basic eDp5', 0);
    expect(c.take('https://files.example/big.iso?x=1', 10)).toBeUndefined();
    expect(c.take('https://files.example/big.iso', 10)).toBe('Basic YTpi');
    expect(c.take('https://files.example/big.iso', 11)).toBeUndefined(); // once
    expect(c.take('https://files.example/other', 60_001)).toBeUndefined(); // too old
    expect(c.size()).toBe(0);
  });

  it('forgets everything when downloads are turned off, and stays bounded', () => {
    const c = new Credentials();
    c.enable(true);
    for (let i = 0; i < 100; i++) c.seen(`https://files.example/${i}`, 'Bearer t', 0);
    expect(c.size()).toBeLessThanOrEqual(32);
    c.enable(false);
    expect(c.size()).toBe(0);
  });
});

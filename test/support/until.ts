/** Polls `probe` until it returns a value other than undefined/false, or fails after the deadline. */
export async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 10_000, everyMs = 10): Promise<Exclude<T, false | undefined>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined && v !== false) return v as Exclude<T, false | undefined>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

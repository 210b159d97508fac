/** A clock tests move forward instead of sleeping. */
export function testClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** A clock that stands still until the test moves it: events get exactly the times a test sets. */
export function manualClock(start: number) {
  let t = start;
  return {
    now: () => t,
    advance(ms: number) {
      t += ms;
    },
    set(ms: number) {
      t = ms;
    },
  };
}

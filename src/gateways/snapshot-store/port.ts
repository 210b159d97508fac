/** Snapshot store port: folded aggregate states kept between processes (src/commands/aggregate-cache.ts uses it). */
export interface Snapshot {
  revision: number;
  position: number;
  state: unknown;
}

/** Where folded states are kept between processes. Losing one only costs a longer fold. */
export interface SnapshotStore {
  get(key: string): Snapshot | undefined | Promise<Snapshot | undefined>;
  put(key: string, snapshot: Snapshot): void | Promise<void>;
  close?(): void | Promise<void>;
}

/**
 * The platform key: 32 random bytes kept in the event store (stream `platform-keys`), so every
 * process and every restart of a deployment shares it. Recording URLs are signed with it
 * (src/domain/recording.ts) and the live event cursors' key is derived from it (src/domain/cursor.ts).
 */
import { randomBytes } from 'node:crypto';
import type { EventStore } from '../gateways/event-store/port.js';
import { isEvent } from './platform-events.js';
import { retryOnConflict } from './retry.js';

const KEY_STREAM = 'platform-keys';

/** The recording-signing key: created once by whichever process asks first. */
export async function loadSigningKey(events: EventStore): Promise<Buffer> {
  // Another process may create it first (a conflict): then its key is read on the next attempt.
  return retryOnConflict(
    async () => {
      const existing = await events.readStream(KEY_STREAM);
      const found = existing.find((e) => isEvent(e, 'RecordingKeyCreated'));
      if (found) return Buffer.from(found.data.key, 'base64');
      const key = randomBytes(32);
      await events.appendToStream(KEY_STREAM, [{ type: 'RecordingKeyCreated', data: { key: key.toString('base64') } }], { expectedRevision: 'no_stream' });
      return key;
    },
    { maxAttempts: 3, giveUp: () => new Error('could not load the recording key') },
  );
}

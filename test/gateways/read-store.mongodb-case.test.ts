/**
 * MongoDB refuses to create a database whose name differs only in case from one it has
 * (DatabaseDifferCase, code 13297); the wire double does too, and a start that meets it is one
 * line naming MONGODB_URL (exit code 2), not a stack trace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoReadStore } from '../../src/gateways/read-store/mongodb.js';
import { loadConfig } from '../../src/config.js';
import { startupProblem } from '../../src/startup.js';
import { MongoDouble } from '../support/mongo-double/server.js';

describe('MongoDB database names that differ only in case', () => {
  const mongo = new MongoDouble();
  beforeAll(async () => {
    await mongo.start();
  });
  afterAll(async () => {
    await mongo.stop();
  });

  it('are refused by the server when the second is created, and the start names MONGODB_URL', async () => {
    const first = await MongoReadStore.open(mongo.url('Telephony'));
    await first.close();
    let err: unknown = null;
    try {
      const second = await MongoReadStore.open(mongo.url('telephony'));
      await second.close();
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 13297 });
    const line = startupProblem(err, loadConfig({}));
    expect(line).toMatch(/^MONGODB_URL: its database differs only in case from one the server has \(.*\[Telephony\].*\[telephony\]/);
    expect(line!.split('\n')).toHaveLength(1);
  });
});
